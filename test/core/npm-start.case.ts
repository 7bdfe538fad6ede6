import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from '../helpers/app.js'
import { sseEvents } from '../helpers/inference.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { processesWithMark } from '../helpers/serve-process.js'

// README's quick start: `npm start` (prestart: ensure the runtime and the demo model; then serve), and the chat
// with llamagate/tiny-demo it shows. Run on a fresh data folder (LLAMAGATE_HOME) whose runtimes/ holds the
// runtime the tests use, laid out as the build leaves it, so that prestart finds it and builds nothing.

type Entry = Record<string, any>
const DEMO = 'llamagate/tiny-demo'

interface NpmStart { child: ChildProcess, mark: string, address: string, output: () => string, exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }> }

async function freshHome (t: Test): Promise<string> {
  const home = await tempDir(t, 'llamagate-npm-start-')
  const cpuDir = dirname((await cpuRuntime()).binDir)
  const version = basename(dirname(cpuDir))
  if (!version.startsWith('llama.cpp-') || !existsSync(join(cpuDir, 'build-info.json'))) {
    throw new Error(`the test runtime at ${cpuDir} is not laid out as the build leaves it (runtimes/llama.cpp-<tag>/cpu/{bin,build-info.json}): npm start would build one`)
  }
  await mkdir(join(home, 'runtimes', version), { recursive: true })
  await symlink(cpuDir, join(home, 'runtimes', version, 'cpu'))
  return home
}

/** `npm start` in the package root, in a process group of its own, every process it starts marked. */
async function npmStart (t: Test, home: string, timeoutMs = 180_000): Promise<NpmStart> {
  const mark = randomUUID()
  const child = spawn('npm', ['start'], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, LLAMAGATE_HOME: home, LLAMAGATE_PORT: '0', LLAMAGATE_OLLAMA_LISTEN: 'off', LLAMAGATE_TEST_MARK: mark },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  child.stdout!.on('data', (d) => { output += d })
  child.stderr!.on('data', (d) => { output += d })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  // Whatever the test found, nothing of this run may outlive it.
  t.teardown(async () => {
    try { process.kill(-child.pid!, 'SIGKILL') } catch {}
    for (const pid of await processesWithMark(mark)) { try { process.kill(pid, 'SIGKILL') } catch {} }
  })
  const deadline = Date.now() + timeoutMs
  let exitedEarly = false
  void exited.then(() => { exitedEarly = true })
  for (;;) {
    const match = /listening on (http:\/\/[^\s"]+)/.exec(output)
    if (match) return { child, mark, address: match[1]!, output: () => output, exited }
    if (exitedEarly) throw new Error(`npm start exited before listening:\n${output}`)
    if (Date.now() > deadline) throw new Error(`npm start did not listen within ${timeoutMs / 1000} s:\n${output}`)
    await sleep(100)
  }
}

async function cmdline (pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '?')).split('\0').join(' ').trim()
}

/** Waits until no process of the run is left; returns the survivors (with their command lines) if some stay. */
async function survivors (mark: string, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const left = await processesWithMark(mark)
    if (left.length === 0) return []
    if (Date.now() > deadline) return Promise.all(left.map(async (pid) => `${pid}: ${await cmdline(pid)}`))
    await sleep(100)
  }
}

async function chatWithDemo (t: Test, url: string): Promise<void> {
  const tags = (await (await fetch(`${url}/api/tags`)).json()) as { models: Entry[] }
  t.ok(tags.models.some((m) => m.name === DEMO), `${DEMO} is listed`)
  // README's curl, with the options this 2-core test machine needs.
  const res = await fetch(`${url}/api/chat`, {
    method: 'POST',
    body: JSON.stringify({ model: DEMO, messages: [{ role: 'user', content: 'hi' }], options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 8 } }),
  })
  t.equal(res.status, 200, 'README\'s chat with the demo model answers')
  t.match(res.headers.get('content-type'), /text\/event-stream/, 'streamed by default')
  const events = await sseEvents(res) as Entry[]
  // At most the 8 tokens asked for: the demo model's random weights may sample its end-of-text token sooner.
  const last = events.at(-1)!
  t.match(last, { model: DEMO, done: true }, 'the stream ends with the final event')
  t.ok(Number.isInteger(last.eval_count) && (last.eval_count as number) >= 1 && (last.eval_count as number) <= 8, `with the tokens generated (${last.eval_count})`)
  t.ok(last.eval_count === 8 ? ['length', 'stop'].includes(last.done_reason) : last.done_reason === 'stop', `and why it ended (${last.done_reason})`)
  t.ok(events.slice(0, -1).every((e) => typeof e.message?.content === 'string'), 'text fragments before it')
}

// The second run starts on the folder the first one left: what a user does the next day.
t.test('npm start twice on one data folder', async (t) => {
  const home = await freshHome(t)

  await t.test('npm start on a fresh data folder: finds the runtime, offers the demo model, serves it; SIGTERM to npm leaves no process', async (t) => {
    const run = await npmStart(t, home)
    t.match(run.output(), /\[runtime\] using llama\.cpp .*\(built\)/, 'prestart found the runtime under LLAMAGATE_HOME (no build)')
    t.match(run.output(), /\[demo\] imported llamagate\/tiny-demo/, 'prestart imported the demo model')
    t.equal((await fetch(`${run.address}/api/health`)).status, 200)
    await chatWithDemo(t, run.address)
    t.ok((await processesWithMark(run.mark)).length >= 3, 'npm, the gateway and its llama-server are running')
    // What a service manager or `kill <pid>` does: SIGTERM to npm, the process that was started.
    process.kill(run.child.pid!, 'SIGTERM')
    const left = await survivors(run.mark, 30_000)
    t.same(left, [], 'no process of npm start is left 30 s after SIGTERM to npm')
  })

  await t.test('npm start again on the same folder: the demo model is kept, not imported again; Ctrl-C (SIGINT to the process group) stops everything', async (t) => {
    const again = await npmStart(t, home)
    t.notMatch(again.output(), /\[demo\] imported/, 'the second prestart imports nothing')
    await chatWithDemo(t, again.address)
    process.kill(-again.child.pid!, 'SIGINT')
    t.same(await survivors(again.mark, 30_000), [], 'no process left after Ctrl-C')
    const { code, signal } = await again.exited
    t.ok(code === 0 || code === 130 || signal === 'SIGINT', `npm ended (${code ?? signal})`)
  })
})
