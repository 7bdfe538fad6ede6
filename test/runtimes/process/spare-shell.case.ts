import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { SpareShell } from '../../../runtimes/process/spare-shell.js'
import { childEnv } from '../../helpers/child-env.js'
import { until } from '../../helpers/until.js'

// The script every launch runs: says its shell's pid, then becomes the command, as the watchdog does.
const SCRIPT = 'echo "shell $$"\nexec "$@"'
// Prints its arguments as JSON: what reached the program, byte for byte.
const ECHO_ARGS = [process.execPath, '-e', 'console.log(JSON.stringify(process.argv.slice(1)))']

async function output (child: ChildProcessWithoutNullStreams): Promise<{ shell: number, args: string[], code: number | null }> {
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  const [first, second] = out.trim().split('\n')
  return { shell: Number(/^shell (\d+)$/.exec(first ?? '')?.[1]), args: JSON.parse(second ?? 'null') as string[], code }
}

/** Running, that is: not gone and not a zombie waiting to be collected. */
function alive (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

const AWKWARD = ['plain', 'with space', '', "it's", '"quoted"', '$HOME and `date`', '\\back\\slash', 'ünïcode ✓', '-n', '*']

t.test('a prepared spare runs the command with its arguments exactly as given, and is used once', async (t) => {
  const shells = new SpareShell(SCRIPT, 'test-shell')
  t.teardown(() => shells.close())
  t.equal(shells.hasSpare, false)
  shells.prepare()
  t.equal(shells.hasSpare, true)
  const sparePid = (shells as unknown as { spare: { pid: number } }).spare.pid
  shells.prepare()
  t.equal((shells as unknown as { spare: { pid: number } }).spare.pid, sparePid, 'prepare() with a spare waiting forks no other')
  const child = shells.launch([...ECHO_ARGS, ...AWKWARD])
  t.equal(child.pid, sparePid, 'the launch is the spare shell')
  t.equal(shells.hasSpare, false, 'taken')
  const result = await output(child)
  t.equal(result.code, 0)
  t.equal(result.shell, sparePid, 'the script ran in the spare')
  t.same(result.args, AWKWARD)
})

t.test('without a spare, or with an argument a line cannot carry, a fresh shell runs it', async (t) => {
  const shells = new SpareShell(SCRIPT, 'test-shell')
  t.teardown(() => shells.close())
  const fresh = await output(shells.launch([...ECHO_ARGS, 'a b', '']))
  t.equal(fresh.code, 0)
  t.same(fresh.args, ['a b', ''])
  shells.prepare()
  const sparePid = (shells as unknown as { spare: { pid: number } }).spare.pid
  const multiline = shells.launch([...ECHO_ARGS, 'two\nlines'])
  t.not(multiline.pid, sparePid)
  t.same((await output(multiline)).args, ['two\nlines'])
  const started = Date.now()
  while (alive(sparePid) && Date.now() - started < 10_000) await sleep(10)
  t.notOk(alive(sparePid), 'the spare it could not use was ended')
})

t.test('a spare that died is not used: the launch forks anew', async (t) => {
  const shells = new SpareShell(SCRIPT, 'test-shell')
  t.teardown(() => shells.close())
  shells.prepare()
  const sparePid = (shells as unknown as { spare: { pid: number } }).spare.pid
  process.kill(sparePid, 'SIGKILL')
  await until('the dead spare to be noticed', () => !shells.hasSpare, 10_000, 5)
  const child = shells.launch([...ECHO_ARGS, 'x'])
  t.not(child.pid, sparePid)
  t.same((await output(child)).args, ['x'])
})

t.test('close() ends the spare', async (t) => {
  const shells = new SpareShell(SCRIPT, 'test-shell')
  shells.prepare()
  const sparePid = (shells as unknown as { spare: { pid: number } }).spare.pid
  shells.close()
  t.equal(shells.hasSpare, false)
  const started = Date.now()
  while (alive(sparePid) && Date.now() - started < 10_000) await sleep(10)
  t.notOk(alive(sparePid), 'the spare shell is gone')
})

t.test('a spare never outlives its gateway: killed with SIGKILL, its spare goes too', async (t) => {
  const holder = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `
    const { SpareShell } = await import(${JSON.stringify(new URL('../../../runtimes/process/spare-shell.ts', import.meta.url).href)})
    const shells = new SpareShell('exec "$@"', 'test-shell')
    shells.prepare()
    console.log(shells.spare.pid)
    setInterval(() => {}, 1000)
  `], { env: childEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { holder.kill('SIGKILL') })
  const sparePid = Number(await new Promise<string>((resolve, reject) => {
    holder.stdout.once('data', (d: Buffer) => resolve(d.toString()))
    holder.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)))
  }))
  t.ok(alive(sparePid), 'the spare waits')
  holder.kill('SIGKILL')
  const started = Date.now()
  while (alive(sparePid) && Date.now() - started < 10_000) await sleep(10)
  t.notOk(alive(sparePid), `the spare ended ${Date.now() - started} ms after its gateway's SIGKILL`)
})

t.test('a process with only a spare left exits: the spare does not keep it alive', async (t) => {
  const holder = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `
    const { SpareShell } = await import(${JSON.stringify(new URL('../../../runtimes/process/spare-shell.ts', import.meta.url).href)})
    new SpareShell('exec "$@"', 'test-shell').prepare()
  `], { env: childEnv(), stdio: ['ignore', 'ignore', 'inherit'] })
  t.teardown(() => { holder.kill('SIGKILL') })
  const code = await Promise.race([new Promise((resolve) => holder.once('exit', resolve)), sleep(20_000, 'still running', { ref: false })])
  t.equal(code, 0)
})
