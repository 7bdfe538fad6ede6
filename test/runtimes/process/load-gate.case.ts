import { existsSync, statSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Client } from 'undici'
import { isAlive } from '../../../core/base/process-alive.js'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// A start prepared while the load waits for room (llama.cpp patch 0010, --load-gate): the process reads the model's
// metadata and vocabulary, then waits at a FIFO beside its socket until start() lets it load on.

async function gated (t: Test, modelPath?: string): Promise<{ server: LlamaServer, gate: string, socketPath: string }> {
  const dir = await tempDir(t)
  const socketPath = join(dir, '1.sock')
  const model = modelPath ?? (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: model, alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, socketPath })
  t.teardown(() => server.stop(0))
  return { server, gate: join(dir, '1.gate'), socketPath }
}

async function health (socketPath: string): Promise<number> {
  const client = new Client('http://localhost', { socketPath })
  try {
    return (await client.request({ path: '/health', method: 'GET' })).statusCode
  } finally {
    await client.close()
  }
}

t.test('prepare() parks before the tensors; start() loads on from there and serves', async (t) => {
  const { server, gate, socketPath } = await gated(t)
  t.ok(server.preparesAhead, 'the runtime the tests run has the gate')
  t.equal(server.preparedInMs, null, 'nothing prepared yet')
  t.equal(server.state, 'made')
  const preparing = server.prepare()
  t.equal(server.state, 'preparing', 'on its way to its gate')
  await preparing
  t.ok(server.preparedInMs! > 0, 'how long the preparation took, spawn to gate')
  t.equal(server.state, 'prepared', 'at its gate: prepared, not yet loading')
  t.ok(isAlive(server.pid!))
  t.ok(statSync(gate).isFIFO(), 'its gate is a FIFO beside its socket')
  t.match(server.args().join(' '), `--load-gate ${gate}`)
  const log = server.logTail().join('\n')
  t.match(log, /waiting for a go-ahead at /)
  t.notMatch(log, /load_tensors|llama_context|listening on/, 'no tensor loaded and no context made while parked')
  t.equal(await health(socketPath), 503, 'it answers, as loading')
  await server.start()
  t.equal(server.state, 'ready')
  t.notOk(existsSync(gate), 'the FIFO is gone once read')
  // Its output comes through a pipe, which may be read after /health answered.
  await until('its log to say it loaded on', () => /go-ahead received/.test(server.logTail().join('\n')))
  const client = new Client('http://localhost', { socketPath })
  t.teardown(() => client.close())
  const res = await client.request({ path: '/completion', method: 'POST', body: JSON.stringify({ prompt: 'hello', n_predict: 4, ignore_eos: true }) })
  t.equal(((await res.body.json()) as { tokens_predicted: number }).tokens_predicted, 4)
})

t.test('a start asked for while the preparation is under way waits for the gate, then loads', async (t) => {
  const { server, gate } = await gated(t)
  const prepared = server.prepare()
  const started = server.start()
  t.equal(server.state, 'preparing', 'the start waits for the gate')
  await started
  await prepared
  t.equal(server.state, 'ready')
  t.notOk(existsSync(gate), 'its gate was read: the FIFO goes once its byte came, before the tensors')
})

t.test('a parked process stopped: gone with its FIFO, and a later start says it was stopped', async (t) => {
  const { server, gate } = await gated(t)
  await server.prepare()
  const pid = server.pid!
  await server.stop(0)
  t.equal(server.state, 'stopped')
  t.notOk(isAlive(pid), 'the parked process is gone')
  t.notOk(existsSync(gate), 'its FIFO too')
  await t.rejects(server.start(), { code: 'runtime_stopped' })
})

t.test('a model that cannot be read fails the preparation itself, with llama-server\'s reason', async (t) => {
  const dir = await tempDir(t)
  const broken = join(dir, 'broken.gguf')
  await writeFile(broken, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(60, 0xff)]))
  const { server } = await gated(t, broken)
  await t.rejects(server.prepare(), { code: 'runtime_start_failed', message: /failed to start: llama-server exited during start-up/ })
  t.equal(server.state, 'stopped')
  await t.rejects(server.start(), { code: 'runtime_start_failed' }, 'start() says the same')
})

t.test('a build without the gate prepares nothing: start() does the whole start', async (t) => {
  const build = await cpuRuntime()
  const dir = await tempDir(t)
  const { file } = await writeTinyGguf({ file: join(dir, 'tiny.gguf') })
  const server = new LlamaServer({ build: { ...build, features: { ...build.features, loadGate: false } }, modelPath: file, alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, socketPath: join(dir, '1.sock') })
  t.teardown(() => server.stop(0))
  t.notOk(server.preparesAhead)
  await server.prepare()
  t.equal(server.pid, undefined, 'no process yet')
  t.equal(server.state, 'made', 'nothing spawned: no state but its first')
  t.notMatch(server.args().join(' '), /--load-gate/)
  await server.start()
  t.equal(server.state, 'ready')
})

t.test('on a loopback port there is no private folder for a FIFO: nothing is prepared', async (t) => {
  const dir = await tempDir(t)
  const { file } = await writeTinyGguf({ file: join(dir, 'tiny.gguf') })
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: file, alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop(0))
  t.notOk(server.preparesAhead)
  await server.prepare()
  t.equal(server.pid, undefined)
})
