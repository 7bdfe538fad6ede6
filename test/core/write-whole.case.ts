import { readdir, readFile, lstat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { writeWhole } from '../../core/base/write-whole.js'
import { tempDir } from '../helpers/app.js'

// writeWhole's temporary file is made new under a random name: a link planted where the old, predictable name
// (`<file>.tmp-<pid>`) was, in a folder others can write, is never written through.
t.test('a link at the old temporary name is not followed; the file is written whole, nothing left beside it', async (t) => {
  const dir = await tempDir(t)
  const victim = join(await tempDir(t), 'victim.txt')
  await writeFile(victim, 'untouched')
  const file = join(dir, 'settings.json')
  await symlink(victim, `${file}.tmp-${process.pid}`)
  await writeWhole(file, '{"merged":true}', 0o600)
  t.equal(await readFile(victim, 'utf8'), 'untouched', 'the link\'s target is as it was')
  t.equal(await readFile(file, 'utf8'), '{"merged":true}')
  const info = await lstat(file)
  t.ok(info.isFile(), 'a file of its own, not a link')
  t.equal(info.mode & 0o777, 0o600)
  t.same((await readdir(dir)).sort(), ['settings.json', 'settings.json.tmp-' + process.pid].sort(), 'no temporary file left (the planted link is not ours to remove)')
})
