import { spawn } from 'node:child_process'
import { connect, createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { freePort } from '../../../runtimes/process/free-port.js'
import { probeRpcWorker } from '../../../runtimes/rpc/rpc-probe.js'
import { startMemoryCapRelay } from '../../../runtimes/rpc/rpc-memory-cap.js'
import { startRpcWorker } from '../../../runtimes/rpc/rpc-worker.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// The RPC probe against llama.cpp's real worker: ready with its memory, busy while another client holds it,
// unreachable, and a worker of another protocol version; the memory-cap relay in front of it.

const MiB = 2 ** 20

async function realWorker (t: Test): Promise<number> {
  const runtime = await cpuRuntime()
  if (!runtime.rpcServerPath) throw new Error(`the test runtime in ${runtime.binDir} has no ggml-rpc-server: rebuild it (npm run runtime:build)`)
  const port = await freePort()
  const child = spawn(runtime.rpcServerPath, ['--port', String(port), '--threads', '1'], { stdio: 'ignore' })
  t.teardown(() => { child.kill('SIGKILL') })
  await until('the worker answers', async () => (await probeRpcWorker({ host: '127.0.0.1', port }, 500)).state === 'ready', 30_000)
  return port
}

t.test('a real worker: ready with its devices; busy while another client holds it; capped through the relay', async (t) => {
  const port = await realWorker(t)
  const ready = await probeRpcWorker({ host: '127.0.0.1', port })
  t.match(ready, { state: 'ready', version: /^7\.\d+\.\d+$/, devices: [{ index: 0, totalBytes: Number, freeBytes: Number }] })
  t.ok(ready.state === 'ready' && ready.devices[0]!.totalBytes > 256 * MiB, 'the CPU device reports the machine\'s memory')

  const relayPort = await freePort()
  const relay = await startMemoryCapRelay({ listen: { host: '127.0.0.1', port: relayPort }, target: { host: '127.0.0.1', port }, capBytes: 300 * MiB })
  t.teardown(() => relay.close())
  t.match(await probeRpcWorker({ host: '127.0.0.1', port: relayPort }), { state: 'ready', devices: [{ totalBytes: 300 * MiB, freeBytes: 300 * MiB }] }, 'through the relay, the memory is capped')
  t.match(await probeRpcWorker({ host: '127.0.0.1', port: relayPort }), { state: 'ready' }, 'and the relay serves the next connection too')

  // Another client that has said HELLO holds the worker (it serves one connection at a time).
  const holder: Socket = connect({ host: '127.0.0.1', port })
  await new Promise((resolve) => holder.once('connect', resolve))
  const hello = Buffer.alloc(9 + 24)
  hello.writeUInt8(14, 0)
  hello.writeBigUInt64LE(24n, 1)
  holder.write(hello)
  await new Promise((resolve) => holder.once('data', resolve))
  const busy = await probeRpcWorker({ host: '127.0.0.1', port }, 300)
  t.equal(busy.state, 'busy')
  t.match(busy, { error: /accepted the connection but did not answer within 300 ms \(another client/ })
  holder.destroy()
  await until('free again once the other client has gone', async () => (await probeRpcWorker({ host: '127.0.0.1', port }, 300)).state === 'ready', 10_000)
})

t.test('nothing listening; a worker of another protocol; not a worker at all', async (t) => {
  t.same(await probeRpcWorker({ host: '127.0.0.1', port: await freePort() }), { state: 'unreachable', error: 'connection refused (nothing listens there)' })
  const answers = (reply: Buffer) => createServer((socket) => socket.once('data', () => socket.write(reply)))
  const old = Buffer.alloc(8 + 28)
  old.writeBigUInt64LE(28n, 0)
  old.set([3, 0, 0], 8)
  const servers = [answers(old), answers(Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'))]
  const ports: number[] = []
  for (const server of servers) {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    ports.push((server.address() as { port: number }).port)
    t.teardown(() => server.close())
  }
  t.match(await probeRpcWorker({ host: '127.0.0.1', port: ports[0]! }), { state: 'incompatible', version: '3.0.0', error: /speaks RPC protocol 3\.0\.0, this gateway's llama\.cpp speaks 7\.x: run the same llama\.cpp build on every host/ })
  t.match(await probeRpcWorker({ host: '127.0.0.1', port: ports[1]! }, 500), { state: 'unreachable', error: /not one of the RPC protocol's|closed|no answer/ }, 'an HTTP server is not taken for a worker')
})

t.test('a worker started by llamagate survives a client that hangs up before its answer (SIGPIPE ignored)', async (t) => {
  const port = await freePort()
  const worker = await startRpcWorker({ build: await cpuRuntime(), host: '127.0.0.1', port, threads: 1, onLine: () => {} })
  t.teardown(() => worker.stop())
  await until('the worker answers', async () => (await probeRpcWorker({ host: '127.0.0.1', port }, 500)).state === 'ready', 30_000)
  const hello = Buffer.alloc(9 + 24)
  hello.writeUInt8(14, 0)
  hello.writeBigUInt64LE(24n, 1)
  const holder = connect({ host: '127.0.0.1', port })
  await new Promise((resolve) => holder.once('connect', resolve))
  holder.write(hello)
  await new Promise((resolve) => holder.once('data', resolve))
  // Queued behind the holder: says HELLO and hangs up at once; the worker answers it later, into a closed socket.
  const rude = connect({ host: '127.0.0.1', port })
  await new Promise((resolve) => rude.once('connect', resolve))
  await new Promise((resolve) => rude.write(hello, resolve))
  rude.destroy()
  holder.destroy()
  let gone = false
  void worker.exited.then(() => { gone = true })
  await until('the worker answers after both are gone', async () => (await probeRpcWorker({ host: '127.0.0.1', port }, 500)).state === 'ready', 10_000)
  t.notOk(gone, 'it is still running: the write into the closed connection failed instead of killing it')
})
