import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, lstat, mkdir, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { mergeSettings, recordPath, undoMerge } from '../../../core/cli/commands/agents/merged-settings.js'
import type { AgentWiring, MergedSettings } from '../../../core/cli/commands/agents/recipe.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { until } from '../../helpers/until.js'
import { isAlive } from '../../../core/base/process-alive.js'

// Settings merged into a user's own file (for agents that read only that one): the user's file comes back byte for
// byte, with its mode, whatever stops the run: the agent's exit, a signal to launch, or launch killed (then
// `launch --undo`, or the next launch, puts it back).

const LAUNCH = fileURLToPath(new URL('./merged-launch.ts', import.meta.url))
const wiring: AgentWiring = { url: 'http://127.0.0.1:1', key: 'sk-merge', model: 'acme/tiny', contextLength: 4096, outputLimit: 1024 }
const merged: MergedSettings = { path: '.fake/settings.json', apply: (existing) => JSON.stringify({ ...(existing !== undefined ? JSON.parse(existing) as object : {}), baseUrl: wiring.url }) }
const USERS = '{ "theme": "dark",\n  "keep": "these bytes" }\n'
const silent = (): void => {}
const mode = async (file: string): Promise<number> => (await stat(file)).mode & 0o777

async function userHome (t: Test): Promise<{ home: string, file: string }> {
  const home = await tempDir(t)
  const file = join(home, '.fake/settings.json')
  await mkdir(join(home, '.fake'))
  await writeFile(file, USERS, { mode: 0o644 })
  await chmod(file, 0o644)
  return { home, file }
}

t.test('merged for a run: mode 600 while it runs, the user\'s bytes and mode after; a symlink stays a link', async (t) => {
  const { home, file } = await userHome(t)
  const merge = await mergeSettings('fake', merged, wiring, home, silent)
  t.same(JSON.parse(await readFile(file, 'utf8')), { theme: 'dark', keep: 'these bytes', baseUrl: wiring.url })
  t.equal(await mode(file), 0o600)
  t.equal(await mode(recordPath(home, 'fake')), 0o600, 'the backup only its owner reads')
  await merge.restore(silent)
  t.equal(await readFile(file, 'utf8'), USERS)
  t.equal(await mode(file), 0o644)
  t.notOk(existsSync(join(home, '.llamagate')), 'the record gone, and the folders launch made for it')

  // A dotfiles manager's link: its target is merged and put back, the link left as it was.
  const dotfiles = join(home, 'dotfiles.json')
  await writeFile(dotfiles, USERS)
  const { home: linked } = await userHome(t)
  const link = join(linked, '.fake/settings.json')
  await rm(link)
  await symlink(dotfiles, link)
  const viaLink = await mergeSettings('fake', merged, wiring, linked, silent)
  t.match(await readFile(link, 'utf8'), /baseUrl/)
  await viaLink.restore(silent)
  t.ok((await lstat(link)).isSymbolicLink(), 'still a link')
  t.equal(await readFile(dotfiles, 'utf8'), USERS)
})

t.test('no file of the user\'s: the file and the folders made for it go again', async (t) => {
  const home = await tempDir(t)
  const merge = await mergeSettings('fake', merged, wiring, home, silent)
  t.match(await readFile(join(home, '.fake/settings.json'), 'utf8'), /baseUrl/)
  await merge.restore(silent)
  t.same(await readdir(home), [], 'a fresh HOME is left as it was: no .fake, no empty ~/.llamagate/launch-backups')
})

t.test('a ~/.llamagate of the user\'s stays; only the empty launch-backups folder goes', async (t) => {
  const { home, file } = await userHome(t)
  await mkdir(join(home, '.llamagate/models'), { recursive: true })
  const merge = await mergeSettings('fake', merged, wiring, home, silent)
  await merge.restore(silent)
  t.equal(await readFile(file, 'utf8'), USERS)
  t.same(await readdir(join(home, '.llamagate')), ['models'])
})

t.test('the file changed during the run: the user\'s comes back, the changed one is kept beside it', async (t) => {
  const { home, file } = await userHome(t)
  const merge = await mergeSettings('fake', merged, wiring, home, silent)
  await writeFile(file, '{"agent":"wrote this"}')
  const notes: string[] = []
  await merge.restore((line) => notes.push(line))
  t.equal(await readFile(file, 'utf8'), USERS)
  t.equal(await readFile(`${file}.from-launch`, 'utf8'), '{"agent":"wrote this"}')
  t.match(notes.join('\n'), 'was changed during the run')
})

async function startLaunch (t: Test, home: string, agent: string): Promise<{ exit: Promise<{ code: number | null, signal: NodeJS.Signals | null }>, pid: number, stderr: () => string }> {
  const child = spawn(process.execPath, [...process.execArgv, LAUNCH, agent], { env: childEnv({ HOME: home }), stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exit = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  t.teardown(() => { child.kill('SIGKILL') })
  return { exit, pid: child.pid!, stderr: () => stderr }
}

/** A stand-in agent: writes its pid where the test waits for it, then waits for a signal, and says which one came. */
async function standIn (home: string): Promise<{ agent: string, started: string, got: string }> {
  const agent = join(home, 'agent.sh')
  const started = join(home, 'agent.pid')
  const got = join(home, 'agent.got')
  await writeFile(agent, `#!/bin/sh\ntrap 'kill $!; echo TERM > "${got}"; exit 143' TERM\necho $$ > "${started}.tmp" && mv "${started}.tmp" "${started}"\nsleep 600 & wait $!\n`)
  await chmod(agent, 0o755)
  return { agent, started, got }
}

/** The stand-in outlives a launch killed with SIGKILL (nothing passes that on): ended (with its sleep) by the test. */
function stopLater (t: Test, pid: number): void {
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGTERM')
    } catch {
      // Gone already.
    }
  })
}

t.test('launch stopped with SIGTERM: the agent gets it, the user\'s file comes back', async (t) => {
  const { home, file } = await userHome(t)
  const { agent, started, got } = await standIn(home)
  const launch = await startLaunch(t, home, agent)
  await until('the agent started', async () => (await readFile(started, 'utf8').catch(() => '')) !== '')
  t.match(await readFile(file, 'utf8'), /baseUrl/, 'merged while the agent runs')
  process.kill(launch.pid, 'SIGTERM')
  t.same(await launch.exit, { code: 143, signal: null }, 'launch ends with the agent\'s code')
  t.equal(await readFile(got, 'utf8'), 'TERM\n')
  t.equal(await readFile(file, 'utf8'), USERS)
  t.equal(await mode(file), 0o644)
})

t.test('launch killed: the record stays; a launch of another refuses while it lives; --undo (or the next launch) puts the file back once the agent is gone too', async (t) => {
  const { home, file } = await userHome(t)
  const { agent, started } = await standIn(home)
  const launch = await startLaunch(t, home, agent)
  await until('the agent started', async () => (await readFile(started, 'utf8').catch(() => '')) !== '')
  const agentPid = Number(await readFile(started, 'utf8'))
  stopLater(t, agentPid)
  const noted = await until('the record names the agent', async () => (JSON.parse(await readFile(recordPath(home, 'fake'), 'utf8')) as { agent?: { pid: number } }).agent)
  t.equal(noted.pid, agentPid, 'the record knows the agent\'s pid')
  await t.rejects(undoMerge('fake', merged, home, silent), /is still running: it puts .* back when fake exits/, 'not while that launch lives')
  await t.rejects(mergeSettings('fake', merged, wiring, home, silent), /another llamagate launch fake \(pid \d+\)/, 'one launch at a time')
  process.kill(launch.pid, 'SIGKILL')
  await launch.exit
  t.match(await readFile(file, 'utf8'), /baseUrl/, 'left merged')

  // The agent outlives its launch (nothing passes SIGKILL on), still using the merged file: not put back under it.
  await t.rejects(undoMerge('fake', merged, home, silent), new RegExp(`fake \\(pid ${agentPid}\\), started by a launch that was killed, still runs and may still read or write .*settings\\.json: stop it, then run llamagate launch --undo fake again`))
  await t.rejects(mergeSettings('fake', merged, wiring, home, silent), new RegExp(`fake \\(pid ${agentPid}\\), started by a launch that was killed, still runs with the settings in .*: stop it, then launch again`))
  t.match(await readFile(file, 'utf8'), /baseUrl/, 'still merged for the agent that runs')
  process.kill(agentPid, 'SIGTERM')
  await until('the agent exited', () => !isAlive(agentPid))

  t.equal(await undoMerge('fake', merged, home, silent), true, '--undo')
  t.equal(await readFile(file, 'utf8'), USERS)
  t.equal(await mode(file), 0o644)

  // Left merged again (this process's record stands for a killed launch's): the next launch puts the user's file back
  // before it merges, so what it backs up is the user's, not the last run's settings.
  await mergeSettings('fake', merged, wiring, home, silent)
  const next = await mergeSettings('fake', merged, wiring, home, silent)
  await next.restore(silent)
  t.equal(await readFile(file, 'utf8'), USERS, 'after a launch that followed the killed one')
  t.equal(await undoMerge('fake', merged, home, silent), false, 'nothing left to undo')
})

/** A process that has exited and that its parent never reaps: `sleep 0` under a shell that execs a long sleep. */
async function zombie (t: Test): Promise<number> {
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] })
  // Once its parent goes, init reaps it.
  t.teardown(() => { parent.kill('SIGKILL') })
  const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(d.toString()))))
  await until('the child exited, unreaped', async () => (await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '')).includes(') Z '))
  return pid
}

t.test('launch killed and its agent exited, but never reaped (a container whose first process reaps no orphans): --undo puts the file back', async (t) => {
  const { home, file } = await userHome(t)
  const agentPid = await zombie(t)
  t.equal(isAlive(agentPid), false, 'a zombie runs nothing: not alive, though a signal still reaches its pid')
  // This process stands for the launch that was killed (its record names this pid, which --undo takes as gone).
  const merge = await mergeSettings('fake', merged, wiring, home, silent)
  merge.started(agentPid)
  await until('the record names the agent', async () => (JSON.parse(await readFile(recordPath(home, 'fake'), 'utf8')) as { agent?: { pid: number } }).agent?.pid === agentPid)
  t.equal(await undoMerge('fake', merged, home, silent), true, '--undo, the agent only a zombie')
  t.equal(await readFile(file, 'utf8'), USERS, 'the user\'s bytes')
  t.equal(await mode(file), 0o644, 'and mode')
})

/** A record as launch writes one, here planted by someone else: restoring it would write `original` to `path`. */
const planted = (path: string, extra: object = {}): string =>
  JSON.stringify({ path, original: Buffer.from('planted').toString('base64'), written: 'x', pid: 2 ** 22 + 1, ...extra })

t.test('a record that is a link, or not mode 600, is refused and nothing is touched', async (t) => {
  const { home, file } = await userHome(t)
  const record = recordPath(home, 'fake')
  await mkdir(join(home, '.llamagate/launch-backups'), { recursive: true })
  const elsewhere = join(home, 'elsewhere.json')
  await writeFile(elsewhere, planted(file), { mode: 0o600 })
  await symlink(elsewhere, record)
  await t.rejects(mergeSettings('fake', merged, wiring, home, silent), /is not trusted \(it is a symbolic link\): nothing was restored/)
  await t.rejects(undoMerge('fake', merged, home, silent), /is not trusted \(it is a symbolic link\)/)
  t.equal(await readFile(file, 'utf8'), USERS, 'the user\'s file untouched')
  t.ok((await lstat(record)).isSymbolicLink(), 'the link left for the user to look at')

  await rm(record)
  await writeFile(record, planted(file), { mode: 0o644 })
  await chmod(record, 0o644)
  await t.rejects(undoMerge('fake', merged, home, silent), /is not trusted \(its mode is 644, not 600\)/)
  t.equal(await readFile(file, 'utf8'), USERS)
})

t.test('a record naming another file than the recipe\'s, or a folder outside HOME, is refused', async (t) => {
  const { home, file } = await userHome(t)
  const record = recordPath(home, 'fake')
  const victim = join(home, 'victim.txt')
  await writeFile(victim, 'mine')
  await mkdir(join(home, '.llamagate/launch-backups'), { recursive: true })
  await writeFile(record, planted(victim), { mode: 0o600 })
  await t.rejects(undoMerge('fake', merged, home, silent), /it names .*victim\.txt, not .*\.fake\/settings\.json/)
  await t.rejects(mergeSettings('fake', merged, wiring, home, silent), /it names .*victim\.txt/)
  t.equal(await readFile(victim, 'utf8'), 'mine')
  t.equal(await readFile(file, 'utf8'), USERS)

  await writeFile(record, planted(file, { original: undefined, madeDir: '/' }), { mode: 0o600 })
  await t.rejects(undoMerge('fake', merged, home, silent), /its folder \/ is not one launch makes inside/)
  t.equal(await readFile(file, 'utf8'), USERS, 'not deleted either')
})

t.test('two launches at once: one merges, the other is refused; the user\'s bytes come back', async (t) => {
  const { home, file } = await userHome(t)
  const [a, b] = await Promise.allSettled([mergeSettings('fake', merged, wiring, home, silent), mergeSettings('fake', merged, wiring, home, silent)])
  const won = [a, b].filter((r) => r.status === 'fulfilled')
  const lost = [a, b].filter((r) => r.status === 'rejected')
  t.equal(won.length, 1, 'one merges')
  t.match(String(lost[0]?.reason), /another llamagate launch fake \(pid \d+\) has its settings in .*: one at a time/)
  await won[0]?.value.restore(silent)
  t.equal(await readFile(file, 'utf8'), USERS)
  t.equal(await mode(file), 0o644)
  t.notOk(existsSync(join(home, '.llamagate/launch-backups')), 'no record, no temporary left, no empty folder')
})
