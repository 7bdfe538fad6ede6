import type { ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Client } from 'undici'
import { RuntimeError } from '../../../core/base/errors.js'
import { isAlive } from '../../../core/base/process-alive.js'
import { LlamaServer, type ExitInfo } from '../../../runtimes/process/llama-server.js'
import { runtimeProcesses } from '../../../runtimes/process/runtime-processes.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'


async function tinyModel (t: Test): Promise<string> {
  const { file } = await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })
  return file
}

t.test('start, ready on /health, one completion, stop', async (t) => {
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  t.equal(server.state, 'made', 'nothing spawned yet')
  await server.start()
  t.equal(server.state, 'ready')
  t.ok(isAlive(server.pid!))
  t.match(server.args().join(' '), /--host 127\.0\.0\.1 --port \d+ --alias acme\/tiny --ctx-size 512 --parallel 1 .*--jinja --no-webui/)
  const health = await fetch(`${server.endpoint.address.baseUrl}/health`)
  t.equal(health.status, 200)
  const res = await fetch(`${server.endpoint.address.baseUrl}/completion`, { method: 'POST', body: JSON.stringify({ prompt: 'hello', n_predict: 8, ignore_eos: true }) })
  const body = await res.json() as { content: string, tokens_predicted: number }
  t.equal(body.tokens_predicted, 8)
  const pid = server.pid
  await server.stop()
  t.equal(server.state, 'stopped')
  t.notOk(isAlive(pid!), 'the process is gone')
  await server.stop() // idempotent
})

t.test('the next start runs in a shell forked after the last start, never during one', async (t) => {
  runtimeProcesses.releaseSpare()
  const options = { build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 }
  const first = new LlamaServer(options)
  t.teardown(() => first.stop())
  let forkedDuring = false
  const watch = setInterval(() => { if (runtimeProcesses.sparePid() !== undefined) forkedDuring = true }, 1)
  await first.start()
  clearInterval(watch)
  t.notOk(forkedDuring, 'no shell was forked while llama-server loaded')
  t.equal(runtimeProcesses.sparePid(), undefined, 'nor as the start ended (the first request would wait for the fork)')
  await until('a spare shell forked after the start', () => runtimeProcesses.sparePid() !== undefined, 10_000, 10)
  const spare = runtimeProcesses.sparePid()
  const second = new LlamaServer(options)
  t.teardown(() => second.stop())
  await second.start()
  t.equal(second.pid, spare, 'the next llama-server runs in that shell (exec in place: same pid)')
  t.equal((await fetch(`${second.endpoint.address.baseUrl}/health`)).status, 200)
})

t.test('warm-up: skipped on CPU builds (it delays the start and speeds no request), kept on GPU builds', async (t) => {
  const build = await cpuRuntime()
  t.ok(build.features.noWarmup, 'this build knows --no-warmup')
  const args = (backend: typeof build.backend) => new LlamaServer({ build: { ...build, backend }, modelPath: '/m.gguf', alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 }).args()
  t.ok(args('cpu').includes('--no-warmup'))
  t.notOk(args('cuda').includes('--no-warmup'))
  t.notOk(new LlamaServer({ build: { ...build, features: { ...build.features, noWarmup: false } }, modelPath: '/m.gguf', alias: 'a/b', ctxSize: 512, parallel: 1, threads: 1 }).args().includes('--no-warmup'), 'not passed to a build that lacks it')
})

t.test('fit: off on CPU builds (it loads the vocabulary a second time to fit nothing), left to llama-server on GPU builds', async (t) => {
  const build = await cpuRuntime()
  t.ok(build.features.fit, 'this build knows --fit')
  const args = (backend: typeof build.backend, features = build.features) => new LlamaServer({ build: { ...build, backend, features }, modelPath: '/m.gguf', alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 }).args()
  const cpu = args('cpu')
  t.equal(cpu[cpu.indexOf('--fit') + 1], 'off')
  t.notOk(args('cuda').includes('--fit'), 'a GPU build fits what is not given (its layers) to its memory')
  t.notOk(args('cpu', { ...build.features, fit: false }).includes('--fit'), 'not passed to a build that lacks it')
})

t.test('glibc\'s allocator on huge pages: in the started process\'s environment on Linux, under its kind\'s own', async (t) => {
  const build = await cpuRuntime()
  const server = new LlamaServer({ build, modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  t.same(server.env('linux', undefined), { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' })
  t.same(server.env('darwin', undefined), {}, 'not where glibc is not the C library')
  const kinds = new LlamaServer({ build, modelPath: '/m.gguf', alias: 'a/b', ctxSize: 512, parallel: 1, threads: 1, env: { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0', X: '1' } })
  t.same(kinds.env('linux', undefined), { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0', X: '1' }, 'a runtime kind\'s variables win')
  await server.start()
  const environ = readFileSync(`/proc/${server.pid!}/environ`, 'utf8').split('\0')
  t.ok(environ.includes(`GLIBC_TUNABLES=${server.env().GLIBC_TUNABLES!}`), 'llama-server itself runs with it (env(1) execs it in place)')
})

t.test('a corrupt GGUF: the start fails with llama-server\'s own words', async (t) => {
  const file = join(await tempDir(t), 'corrupt.gguf')
  await writeFile(file, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64, 0xff)]))
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: file, alias: 'acme/corrupt', ctxSize: 512, parallel: 1, threads: 1 })
  const err = await t.rejects(server.start())
  t.type(err, RuntimeError)
  t.match((err as Error).message, /model "acme\/corrupt" failed to start: llama-server exited during start-up \(exit code 1\)/)
  t.match((err as Error).message, /failed to load model|error loading model/i, 'the runtime\'s own reason')
  t.ok((err as RuntimeError).logTail.length > 0)
})

t.test('a missing binary: the start fails saying so', async (t) => {
  const build = { ...await cpuRuntime(), serverPath: '/nonexistent/llama-server' }
  const server = new LlamaServer({ build, modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 })
  const err = await t.rejects(server.start())
  t.type(err, RuntimeError)
  t.match((err as Error).message, /ENOENT|not found|no such file/i)
})

t.test('a port already taken: the start fails with the runtime\'s bind error', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => blocker.close())
  const port = (blocker.address() as { port: number }).port
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, port })
  const err = await t.rejects(server.start())
  t.match((err as Error).message, /bind|address already in use/i)
})

t.test('a process killed from outside is noticed at once, from its exit (not at a later health poll)', async (t) => {
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  await server.start()
  let noticed = false
  const exited = new Promise<ExitInfo>((resolve) => server.onExit((info) => { noticed = true; resolve(info) }))
  // Whether the server knew by the end of the turn of the process's own 'close' event: a later poll (a timer) comes
  // in a later turn, however slow or fast the machine.
  const child = (server as unknown as { child: ChildProcess }).child
  const knownAtClose = new Promise<boolean>((resolve) => child.once('close', () => setImmediate(() => resolve(noticed))))
  const killedAt = Date.now()
  process.kill(server.pid!, 'SIGKILL')
  const info = await exited
  t.ok(await knownAtClose, `noticed from its exit, in the same turn as the process's close event (${Date.now() - killedAt} ms after the kill)`)
  t.equal(info.signal, 'SIGKILL')
  t.equal(info.expected, false, 'nobody asked it to stop')
  t.equal(server.state, 'stopped')
})

t.test('stopAll stops every process started', async (t) => {
  const build = await cpuRuntime()
  const model = await tinyModel(t)
  const servers = [0, 1].map(() => new LlamaServer({ build, modelPath: model, alias: 'acme/tiny', ctxSize: 256, parallel: 1, threads: 1 }))
  await Promise.all(servers.map((s) => s.start()))
  const pids = servers.map((s) => s.pid)
  await runtimeProcesses.stopAll()
  for (const pid of pids) t.notOk(isAlive(pid!), `process ${pid} is gone`)
})

t.test('a quantized model (Q8_0 made by llama-quantize) loads and generates', async (t) => {
  // Guards the build recipe: a native build with Intel AMX crashed on every quantized model in VMs.
  const build = await cpuRuntime()
  t.ok(build.quantizePath, 'the build has llama-quantize')
  const dir = await tempDir(t)
  const f16 = (await writeTinyGguf({ file: join(dir, 'f16.gguf'), nEmbd: 256, nFf: 512 })).file
  const { execa } = await import('execa')
  const quantized = join(dir, 'q8_0.gguf')
  const result = await execa(build.quantizePath!, [f16, quantized, 'Q8_0'], { reject: false, all: true })
  t.equal(result.exitCode, 0, result.all?.split('\n').slice(-3).join(' | '))
  const server = new LlamaServer({ build, modelPath: quantized, alias: 'acme/q8', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  await server.start()
  const res = await fetch(`${server.endpoint.address.baseUrl}/completion`, { method: 'POST', body: JSON.stringify({ prompt: 'hello', n_predict: 8, ignore_eos: true }) })
  t.equal(((await res.json()) as { tokens_predicted: number }).tokens_predicted, 8)
})

t.test('on a Unix socket: ready, answers through the socket, no TCP port; the socket file goes with the process', async (t) => {
  const socketPath = join(await tempDir(t), 'rt.sock')
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, socketPath })
  t.teardown(() => server.stop())
  await server.start()
  t.equal(server.endpoint.address.socketPath, socketPath)
  t.equal(server.endpoint.address.baseUrl, 'http://localhost')
  t.match(server.args().join(' '), `--host ${socketPath} `)
  const client = new Client(server.endpoint.address.baseUrl, { socketPath })
  t.teardown(() => client.close())
  const res = await client.request({ method: 'POST', path: '/completion', body: JSON.stringify({ prompt: 'hello', n_predict: 4, ignore_eos: true }) })
  t.equal(res.statusCode, 200)
  t.equal((await res.body.json() as { tokens_predicted: number }).tokens_predicted, 4)
  t.same(tcpListenersOf(server.pid!), [], 'llama-server listens on no TCP port')
  await server.stop()
  t.notOk(existsSync(socketPath), 'the socket file is removed')
})

t.test('stop(0) kills at once with SIGKILL, an expected exit; the socket file goes all the same', async (t) => {
  const socketPath = join(await tempDir(t), 'rt.sock')
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, socketPath })
  t.teardown(() => server.stop())
  const exits: ExitInfo[] = []
  server.onExit((info) => exits.push(info))
  await server.start()
  const pid = server.pid!
  await server.stop(0)
  t.notOk(isAlive(pid), 'the process is gone')
  t.match(exits, [{ signal: 'SIGKILL', expected: true }], 'killed, not asked, and not taken for a crash')
  t.notOk(existsSync(socketPath), 'the socket file is removed (llama-server had no chance to)')
})

t.test('a socket path too long for a socket address falls back to a loopback port', async (t) => {
  const socketPath = join(await tempDir(t), `${'x'.repeat(120)}.sock`)
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await tinyModel(t), alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, socketPath })
  t.teardown(() => server.stop())
  await server.start()
  t.equal(server.endpoint.address.socketPath, null)
  t.match(server.endpoint.address.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.equal((await fetch(`${server.endpoint.address.baseUrl}/health`)).status, 200)
  t.equal(tcpListenersOf(server.pid!).length >= 1, true, 'it listens on TCP instead')
})

/** The lines of /proc/net/tcp{,6} for listening sockets (state 0A) that the process holds open. */
function tcpListenersOf (pid: number): string[] {
  const inodes = new Set(readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try { return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] } catch { return undefined }
  }).filter((i): i is string => i !== undefined))
  const table = readFileSync('/proc/net/tcp', 'utf8') + readFileSync('/proc/net/tcp6', 'utf8')
  return table.split('\n').filter((line) => {
    const cols = line.trim().split(/\s+/)
    return cols[3] === '0A' && inodes.has(cols[9]!)
  })
}
