import { spawn } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { LlamaServer, type ExitInfo } from '../../../runtimes/process/llama-server.js'
import { runtimeProcesses } from '../../../runtimes/process/runtime-processes.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { childEnv } from '../../helpers/child-env.js'
import { processesWithMark, runCli, startServe } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'

const HOLDER = fileURLToPath(new URL('./hold-llama-server.ts', import.meta.url))

/** Live (not zombie) processes whose process group is `pgid`: llama-server and its watcher share one. */
async function groupMembers (pgid: number): Promise<number[]> {
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // Fields after the command name, which is in parentheses: state ppid pgrp ...
      const stat = await readFile(`/proc/${entry}/stat`, 'latin1')
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(pgrp) === pgid && state !== 'Z') found.push(Number(entry))
    } catch {
      // Gone while we looked.
    }
  }
  return found
}

async function waitUntilEmpty (pgid: number, timeoutMs: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < timeoutMs) {
    if ((await groupMembers(pgid)).length === 0) return Date.now() - started
    await sleep(20)
  }
  return -1
}

t.test('a gateway killed with SIGKILL leaves no llama-server: the watchdog sees its pipe close', async (t) => {
  const runtime = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })).file
  // The same TypeScript loader this test runs under.
  const holder = spawn(process.execPath, [...process.execArgv, HOLDER, runtime.binDir, model], { env: childEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { holder.kill('SIGKILL') })
  let out = ''
  const { pid, port } = await new Promise<{ pid: number, port: number }>((resolve, reject) => {
    holder.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!)) })
    holder.once('exit', (code) => reject(new Error(`the holder exited with ${code} before starting llama-server`)))
  })
  t.teardown(async () => { try { process.kill(-pid, 'SIGKILL') } catch { /* gone, as it should be */ } })
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'llama-server serves')
  const members = await groupMembers(pid)
  t.ok(members.includes(pid), 'llama-server leads its own process group')
  t.equal(members.length, 3, 'llama-server, the watcher shell and its cat')
  holder.kill('SIGKILL')
  const killedAt = Date.now()
  // llama-server itself: exited once it is a zombie or reaped (init reaps orphans when it gets to them).
  await until('llama-server to exit after the gateway\'s SIGKILL', async () => /\) Z /.test(await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => ') Z ')), 15_000, 10)
  t.comment(`llama-server exited ${Date.now() - killedAt} ms after the gateway's SIGKILL`)
  const tookMs = await waitUntilEmpty(pid, 15_000)
  t.ok(tookMs >= 0, `llama-server and its watcher are gone ${tookMs} ms after the gateway's SIGKILL`)
  await t.rejects(fetch(`http://127.0.0.1:${port}/health`), 'its port is closed')
})

t.test('llamagate serve killed with SIGKILL while serving a model: every process it started goes', async (t) => {
  const dir = await tempDir(t)
  const runtime = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nport: 0\nruntimes:\n  cpu: { bin: ${runtime.binDir} }\ndefault_options: { num_ctx: 256, num_parallel: 1, num_thread: 1 }\n`)
  const imported = await runCli(['import', 'acme/tiny', model, '--config', config])
  t.equal(imported.code, 0, imported.stderr)
  const serve = await startServe(['--config', config])
  t.teardown(async () => { for (const pid of await processesWithMark(serve.mark)) try { process.kill(pid, 'SIGKILL') } catch {} })
  const res = await fetch(`${serve.address}/api/generate`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny', prompt: 'hi', stream: false, options: { num_predict: 2 } }) })
  t.equal(res.status, 200)
  t.ok((await processesWithMark(serve.mark)).length >= 2, 'the gateway and its llama-server run')
  serve.child.kill('SIGKILL')
  await serve.exited
  const killedAt = Date.now()
  let left = await processesWithMark(serve.mark)
  while (left.length > 0 && Date.now() - killedAt < 15_000) { await sleep(20); left = await processesWithMark(serve.mark) }
  t.same(left, [], `nothing is left, ${Date.now() - killedAt} ms after the SIGKILL`)
})

t.test('after a stop or a crash nothing of the process group is left', async (t) => {
  const build = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })).file
  const stopped = new LlamaServer({ build, modelPath: model, alias: 'acme/tiny', ctxSize: 256, parallel: 1, threads: 1 })
  await stopped.start()
  const stoppedPid = stopped.pid!
  t.equal(runtimeProcesses.liveCount(), 1)
  await stopped.stop()
  t.equal(runtimeProcesses.liveCount(), 0)
  t.ok(await waitUntilEmpty(stoppedPid, 5000) >= 0, 'stop() leaves no watcher behind')

  const crashed = new LlamaServer({ build, modelPath: model, alias: 'acme/tiny', ctxSize: 256, parallel: 1, threads: 1 })
  t.teardown(() => crashed.stop())
  await crashed.start()
  const exited = new Promise<ExitInfo>((resolve) => crashed.onExit(resolve))
  process.kill(crashed.pid!, 'SIGSEGV')
  const info = await exited
  t.equal(info.signal, 'SIGSEGV')
  t.equal(info.expected, false)
  t.ok(await waitUntilEmpty(crashed.pid!, 15_000) >= 0, 'the watcher of a crashed llama-server goes too')
})

t.test('stop() during the start: the start fails saying it was stopped, not that the model is bad', async (t) => {
  const build = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })).file
  const server = new LlamaServer({ build, modelPath: model, alias: 'acme/tiny', ctxSize: 256, parallel: 1, threads: 1 })
  // Expected from the start: the start may fail before stop() below has resolved.
  const starting = t.rejects(server.start())
  t.equal(server.state, 'starting')
  // Once the process exists (the port is picked just before the spawn).
  await until('llama-server to be spawned', () => server.pid !== undefined, 30_000, 1)
  await server.stop()
  const err = await starting
  t.match((err as Error).message, /model "acme\/tiny" was stopped while it started/)
  t.equal((err as { code?: string }).code, 'runtime_stopped')
  t.equal(server.state, 'stopped')
})

t.test('an aborted start stops the process and rejects with the abort reason', async (t) => {
  const build = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })).file
  const server = new LlamaServer({ build, modelPath: model, alias: 'acme/tiny', ctxSize: 256, parallel: 1, threads: 1 })
  const controller = new AbortController()
  controller.abort(new Error('client went away'))
  await t.rejects(server.start(controller.signal), /client went away/)
  t.equal(server.state, 'stopped')
  t.equal(runtimeProcesses.liveCount(), 0)
})
