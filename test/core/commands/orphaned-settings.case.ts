import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { removeOrphanedFolders, settingsFolder } from '../../../core/cli/commands/agents/settings-folder.js'
import { tempDir } from '../../helpers/app.js'

// A launch killed outright (SIGKILL) cannot remove its private folder, which may hold the key (Cline's settings
// file does): the next launch removes every run folder whose launch is gone, and nothing else.

/** The pid of a process that has exited (and been reaped): no process has it now. */
async function deadPid (): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise((resolve) => child.once('exit', resolve))
  return child.pid!
}

t.test('a run folder whose launch is gone is removed; a live launch\'s, --print\'s, a link and others stay', async (t) => {
  const root = await tempDir(t)
  const dead = await deadPid()
  const orphan = join(root, `llamagate-cline-run${dead}-AbC123`)
  await mkdir(join(orphan, 'data'), { recursive: true, mode: 0o700 })
  await writeFile(join(orphan, 'data', 'providers.json'), '{"apiKey":"lg-secret"}', { mode: 0o600 })
  const live = join(root, `llamagate-pi-run${process.ppid}-xYz789`)
  const printed = join(root, 'llamagate-cline-Qw3rTy')
  const other = join(root, `something-run${dead}-AbC123`)
  for (const dir of [live, printed, other]) await mkdir(dir)
  const target = await tempDir(t)
  const link = join(root, `llamagate-kilo-run${dead}-LiNk00`)
  await symlink(target, link)

  t.same(await removeOrphanedFolders(root), [orphan], 'the dead launch\'s folder, and only it')
  t.notOk(existsSync(orphan), 'gone with the key in it')
  for (const dir of [live, printed, other, link]) t.ok(existsSync(dir), `${dir} stays`)
  t.ok((await stat(target)).isDirectory(), 'a link\'s target is not followed')
  t.same(await removeOrphanedFolders(join(root, 'missing')), [], 'no temporary folder: nothing to do')
})

t.test('the folders launch makes: a run\'s carries its pid and is private; --print\'s does not', async (t) => {
  const run = await settingsFolder('cline')
  const printed = await settingsFolder('cline', 'print')
  t.teardown(async () => { for (const dir of [run, printed]) await rm(dir, { recursive: true, force: true }) })
  t.match(run, new RegExp(`/llamagate-cline-run${process.pid}-[A-Za-z0-9]{6}$`))
  t.match(printed, /\/llamagate-cline-[A-Za-z0-9]{6}$/)
  t.equal((await stat(run)).mode & 0o777, 0o700)
  t.ok(existsSync(run), 'this launch\'s own folder is never taken for an orphan')
  t.notOk((await removeOrphanedFolders()).includes(run))
})
