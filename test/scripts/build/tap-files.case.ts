import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/paths.js'
import { CASE_SUFFIX, caseFiles } from '../../helpers/cases.js'

// `npm test` runs every test the tree holds: each *.test.ts is a file tap lists (its default exclude drops any folder
// named fixtures, and test/scripts/fixtures holds tests), and each *.case.ts is in a folder whose cases.test.ts runs it.

async function filesUnder (dir: string, suffix: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...await filesUnder(path, suffix))
    else if (entry.name.endsWith(suffix)) found.push(relative(PACKAGE_ROOT, path))
  }
  return found.sort()
}

t.test('tap lists every *.test.ts under test/, and every *.case.ts has a group that runs it', async (t) => {
  const tests = await filesUnder(join(PACKAGE_ROOT, 'test'), '.test.ts')
  const { stdout } = await promisify(execFile)(process.execPath, [join(PACKAGE_ROOT, 'node_modules/.bin/tap'), 'list'], { cwd: PACKAGE_ROOT })
  const listed = stdout.trim().split('\n').map((line) => line.trim()).sort()
  t.ok(tests.length > 50, `${tests.length} test files`)
  t.same(listed, tests, 'tap runs exactly the test files there are')
  const cases = await filesUnder(join(PACKAGE_ROOT, 'test'), CASE_SUFFIX)
  const grouped = new Set(tests.filter((f) => f.endsWith('/cases.test.ts')).flatMap((group) => caseFiles(join(PACKAGE_ROOT, group, '..')).map((f) => relative(PACKAGE_ROOT, f))))
  t.same(cases.filter((f) => !grouped.has(f)), [], 'no case file outside a group')
})
