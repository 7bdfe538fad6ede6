import { spawn, type ChildProcess } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../../core/server/app.js'
import { GATEWAY_NODE_FLAGS } from '../../../core/base/node-flags.js'
import { freePort } from '../../../runtimes/process/free-port.js'
import { runtimeProcesses } from '../../../runtimes/process/runtime-processes.js'
import { tempDir, testConfig } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { post } from '../../helpers/inference.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { CLI, runCli } from '../../helpers/serve-process.js'
import { stablePort } from '../../helpers/stable-port.js'
import { until } from '../../helpers/until.js'

// A model split across two llama.cpp RPC workers on loopback, each started by `llamagate rpc-worker` with a memory
// cap, served by the real gateway and llama-server; then one worker killed mid-answer. The caps leave llama-server's
// --fit its margin (1 GiB a device) and room for the model's layers on both.

const MiB = 2 ** 20

type Test = Parameters<typeof tempDir>[0]
interface Worker { child: ChildProcess, port: number, output: () => string, exited: Promise<unknown> }

/** A config.yaml naming the tests' runtime, for `llamagate rpc-worker --config`. */
async function workerConfig (t: Test): Promise<string> {
  const file = join(await tempDir(t), 'config.yaml')
  await writeFile(file, `runtime: cpu\nruntimes:\n  cpu: { bin: ${JSON.stringify((await cpuRuntime()).binDir)} }\n`)
  return file
}

/** `llamagate rpc-worker` as a real process, once it says it is ready. */
async function startWorker (t: Test, port: number, memMiB: number): Promise<Worker> {
  const child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, CLI, 'rpc-worker', '--port', String(port), '--mem', String(memMiB), '--threads', '1', '--config', await workerConfig(t)], {
    env: childEnv({}), stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (d) => { output += d })
  child.stderr!.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  t.teardown(async () => { child.kill('SIGTERM'); await exited })
  await until(`rpc-worker on port ${port} ready`, () => {
    if (child.exitCode !== null) throw new Error(`rpc-worker exited with ${child.exitCode}:\n${output}`)
    return /RPC worker ready on/.test(output)
  }, 60_000)
  return { child, port, output: () => output, exited }
}

t.test('two loopback workers: split, served, shown; one lost mid-stream fails fast until it is back', async (t) => {
  const runtime = await cpuRuntime()
  t.ok(runtime.features.rpc, 'the runtime takes --rpc (built with the RPC backend)')
  t.ok(runtime.rpcServerPath, `and has the worker binary beside llama-server (${runtime.binDir})`)
  // Worker b comes back on its port: one the kernel never hands out meanwhile.
  const [portA, portB] = [await stablePort(), await stablePort()]
  const a = await startWorker(t, portA, 2048)
  const b = await startWorker(t, portB, 2048)
  t.match(a.output(), new RegExp(`RPC worker ready on 127\\.0\\.0\\.1:${portA} \\(llama\\.cpp .*protocol 7\\.\\d+\\.\\d+; device 0: 2048 MiB, 2048 MiB free\\)`), 'the worker says where it listens and the memory it reports')

  // llama-server's own log comes through the gateway's debug log: that is where it says what went where.
  const log: string[] = []
  const stream = new Writable({ write (chunk, _enc, done) { log.push(String(chunk)); done() } })
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    rpc: { workers: [{ name: 'a', endpoint: `127.0.0.1:${portA}` }, { name: 'b', endpoint: `127.0.0.1:${portB}` }] },
    // -lv 4: llama-server says where each buffer went only at its "trace" verbosity.
    models: { 'acme/split': { rpc: ['a', 'b'], args: ['-lv', '4'] }, 'acme/other': { rpc: ['b'] } },
    stream_format: 'ndjson',
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 16 },
  })
  const app = await buildApp(config, { logger: { level: 'debug', stream } })
  t.teardown(() => app.close())
  await app.store.import('acme/split', await realisticModel('qwen25'))
  await app.store.import('acme/other', await realisticModel('qwen25'))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })

  const runtimes = await (await fetch(`${url}/api/runtimes`)).json() as { rpc: { available: boolean, serverPath: string | null } }
  t.same(runtimes.rpc, { available: true, serverPath: runtime.rpcServerPath }, '/api/runtimes says RPC is available')
  const before = await (await fetch(`${url}/api/rpc-workers`)).json() as { workers: Array<Record<string, any>> }
  t.same(before.workers.map((w) => [w.name, w.endpoint, w.state, w.devices[0]?.total_bytes, w.devices[0]?.free_bytes, w.used_by]), [
    ['a', `127.0.0.1:${portA}`, 'ready', 2048 * MiB, 2048 * MiB, []],
    ['b', `127.0.0.1:${portB}`, 'ready', 2048 * MiB, 2048 * MiB, []],
  ], 'before a load: both ready, with the memory they were capped at')
  t.match(before.workers[0]!.version, /^7\.\d+\.\d+$/)

  const res = await post(`${url}/api/chat`, { model: 'acme/split', stream: false, messages: [{ role: 'user', content: 'Hello there' }], options: { temperature: 0 } })
  const body = await res.json() as { message?: { content: string }, eval_count?: number }
  t.equal(res.status, 200, JSON.stringify(body))
  t.ok((body.eval_count ?? 0) > 0 && body.message?.content !== undefined, `it answers: ${body.eval_count} tokens`)
  const text = log.join('')
  for (const port of [portA, portB]) {
    t.match(text, new RegExp(`RPC\\d\\[127\\.0\\.0\\.1:${port}\\][^"]*buffer size =\\s*[\\d.]+ MiB`), `llama-server's log shows a buffer on the worker at ${port}`)
  }
  const [loaded] = app.scheduler.snapshot()
  const args = (await readFile(`/proc/${loaded!.pid}/cmdline`, 'utf8')).split('\0')
  t.equal(args[args.indexOf('--rpc') + 1], `127.0.0.1:${portA},127.0.0.1:${portB}`, 'llama-server got both workers, in order')
  const ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<{ name: string, rpc_workers: string[] }> }
  t.same(ps.models.map((m) => [m.name, m.rpc_workers]), [['acme/split', ['a', 'b']]], '/api/ps shows the workers the model spans')
  const during = await (await fetch(`${url}/api/rpc-workers`)).json() as { workers: Array<Record<string, any>> }
  t.same(during.workers.map((w) => [w.name, w.state, w.used_by, w.devices[0]?.total_bytes]), [['a', 'in_use', ['acme/split'], 2048 * MiB], ['b', 'in_use', ['acme/split'], 2048 * MiB]],
    'while loaded: in use by the model (not asked: a worker serves one client), with the memory last seen')

  // Worker b dies while an answer streams: the stream ends with an error event that names it.
  const stream2 = await post(`${url}/api/chat`, { model: 'acme/split', messages: [{ role: 'user', content: 'Go on' }], options: { num_predict: 20_000, temperature: 0 } })
  t.equal(stream2.status, 200)
  const reader = stream2.body!.getReader()
  const decoder = new TextDecoder()
  let streamed = ''
  while (!streamed.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) break
    streamed += decoder.decode(value, { stream: true })
  }
  b.child.kill('SIGKILL') // the CLI's watchdog takes its ggml-rpc-server down with it
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    streamed += decoder.decode(value, { stream: true })
  }
  const lines = streamed.trim().split('\n').map((l) => JSON.parse(l) as { error?: string, done?: boolean })
  const last = lines.at(-1)!
  t.match(last.error, new RegExp(`RPC worker "b" \\(127\\.0\\.0\\.1:${portB}\\) is unreachable: connection refused`), `the stream ends with an error event naming the worker: ${last.error}`)
  t.notOk(lines.some((l) => l.done === true), 'and no done line')

  // The next requests fail at once with the worker's state, and start no llama-server (no restart loop).
  await until('the crashed instance gone', () => app.scheduler.snapshot().length === 0, 10_000)
  const starts = (): number => log.join('').split('starting llama-server').length - 1
  const startsBefore = starts()
  for (let i = 0; i < 3; i++) {
    const began = performance.now()
    const again = await post(`${url}/api/chat`, { model: 'acme/split', stream: false, messages: [{ role: 'user', content: 'Hello?' }] })
    const took = performance.now() - began
    t.equal(again.status, 503)
    t.match(await again.json(), { error: new RegExp(`model "acme/split" needs RPC worker "b" \\(127\\.0\\.0\\.1:${portB}\\), which is unreachable: connection refused`) })
    // The state in the message says the worker was probed, not a llama-server waited on; the time (a refused connection: milliseconds), that no load_timeout (5 min) or retry was waited out.
    t.ok(took < 10_000, `answered in ${Math.round(took)} ms`)
  }
  t.equal(starts(), startsBefore, 'no llama-server was started for them')
  t.equal(runtimeProcesses.liveCount(), 0, 'and none runs')
  const afterLoss = await (await fetch(`${url}/api/rpc-workers`)).json() as { workers: Array<Record<string, any>> }
  t.same(afterLoss.workers.map((w) => [w.name, w.state]), [['a', 'ready'], ['b', 'unreachable']], '/api/rpc-workers says which one is gone')
  t.match(afterLoss.workers[1]!.error, /connection refused/)

  // Back on its port, the model loads again across both.
  await b.exited
  await startWorker(t, portB, 2048)
  const back = await post(`${url}/api/chat`, { model: 'acme/split', stream: false, messages: [{ role: 'user', content: 'Hello again' }] })
  t.equal(back.status, 200, 'with the worker back, the model answers again')

  // A worker serves one llama-server at a time: a model that shares one takes its turn (the idle one goes).
  const other = await post(`${url}/api/chat`, { model: 'acme/other', stream: false, messages: [{ role: 'user', content: 'Hi' }] })
  t.equal(other.status, 200, 'a second model on worker b answers')
  t.same(app.scheduler.snapshot().map((m) => [m.model.name, m.rpcWorkers]), [['acme/other', ['b']]], 'after the first, idle, was unloaded from the shared worker')
})

t.test('rpc-worker: off loopback only with --allow-public, and then the warning; a bad flag', async (t) => {
  const refused = await runCli(['rpc-worker', '--host', '0.0.0.0'])
  t.equal(refused.code, 2, 'a public address without --allow-public: a usage error')
  t.match(refused.stderr, /--host 0\.0\.0\.0 is not loopback: the RPC protocol has no authentication.*add --allow-public to listen there anyway/)
  const port = await freePort()
  const child = spawn(process.execPath, [CLI, 'rpc-worker', '--host', '0.0.0.0', '--allow-public', '--port', String(port), '--threads', '1', '--config', await workerConfig(t)], { env: childEnv({}), stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (d) => { output += d })
  child.stderr!.on('data', (d) => { output += d })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  await until('rpc-worker on 0.0.0.0 ready', () => /RPC worker ready on 0\.0\.0\.0:/.test(output) || child.exitCode !== null, 60_000)
  t.match(output, /WARNING: listening on 0\.0\.0\.0, not loopback: the RPC protocol has no authentication.*private network, a VPN or an SSH tunnel/, 'the security warning')
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM ends it cleanly')
  const bad = await runCli(['rpc-worker', '--mem', 'lots'])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--mem must be a whole number from 1 to/)
})
