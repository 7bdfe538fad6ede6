import { join } from 'node:path'
import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'


t.test('GET /api/runtimes lists hardware, builds, the chosen one and why', async (t) => {
  const runtime = await cpuRuntime()
  const app = await build(t, { runtimes: { cpu: { bin: runtime.binDir } } })
  const res = await app.inject({ method: 'GET', url: '/api/runtimes' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body), ['runtime', 'chosen', 'reason', 'warning', 'quantize', 'rpc', 'devices', 'builds', 'rejected', 'build'])
  t.equal(body.runtime, 'auto')
  t.equal(body.build, null, 'no GPU runtime is being built')
  t.same(body.quantize, { available: true, path: join(runtime.binDir, 'llama-quantize') })
  t.same(Object.keys(body.chosen), ['backend', 'binDir', 'serverPath', 'quantizePath', 'rpcServerPath', 'version', 'commit', 'source', 'features'])
  t.same(body.rpc, { available: true, serverPath: join(runtime.binDir, 'ggml-rpc-server') }, 'the built runtime can split models across RPC workers')
  t.equal(body.chosen.source, 'config')
  t.same(body.chosen.features, { jinja: true, flashAttn: true, noWebui: true, fit: true, noWarmup: true, rpc: true, cacheSalt: true, slotCheckpoints: true, cachedPromptSaves: true, loadGate: true }, 'the pinned llama.cpp\'s --help offers every flag the gateway passes (built with the RPC backend), and it carries the patch set')
  t.equal(body.chosen.backend, 'cpu')
  t.equal(body.chosen.binDir, runtime.binDir)
  t.match(body.chosen.version, /^\d+\.\d+/)
  t.equal(body.chosen.quantizePath, join(runtime.binDir, 'llama-quantize'))
  t.match(body.reason, /^(no GPU found|no build for the GPU found)/)
  t.ok(body.devices.some((d: any) => d.backend === 'cpu' && d.totalBytes > 0))
  t.ok(body.builds.length >= 1)
  t.match(app.startupNotes.join(' '), /^runtime: cpu \(llama\.cpp /)
  t.match(app.startupNotes.join(' '), /^runtime: cpu \(llama\.cpp \S+ \w+, config\) — (no GPU found|no build for the GPU found)/)
})

t.test('without any build the app still starts, and a load says how to get one', async (t) => {
  const app = await build(t, { runtime: 'cpu' })
  t.equal(app.runtimes.chosen, null)
  t.match(app.startupNotes.join(' '), /^runtime: none — runtime cpu is forced by config but no cpu build was found; build one with "npm run runtime:build/)
  const listed = (await app.inject({ method: 'GET', url: '/api/runtimes' })).json()
  t.equal(listed.chosen, null)
  t.equal(listed.runtime, 'cpu')
  t.same(listed.quantize, { available: false, path: null })
  const file = (await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf') })).file
  await app.store.import('acme/tiny', file)
  const res = await app.inject({ method: 'POST', url: '/api/chat', payload: { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }] } })
  t.equal(res.statusCode, 502)
  t.match(res.json().error, /no llama\.cpp runtime is available: runtime cpu is forced by config but no cpu build was found; build one with "npm run runtime:build/)
})

t.test('closing the app leaves no llama-server running', async (t) => {
  const runtime = await cpuRuntime()
  const app = await build(t, { runtimes: { cpu: { bin: runtime.binDir } }, default_options: { num_ctx: 256, num_parallel: 1 } })
  let seed = 1
  for (const name of ['acme/a', 'acme/b']) {
    await app.store.import(name, (await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf'), seed: seed++ })).file)
    await app.scheduler.load(name)
  }
  const pids = app.scheduler.snapshot().map((m) => m.pid!)
  t.equal(pids.length, 2)
  for (const pid of pids) t.ok(isAlive(pid))
  await app.close()
  for (const pid of pids) t.notOk(isAlive(pid), `llama-server ${pid} is gone`)
})
