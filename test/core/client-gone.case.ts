import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../core/server/app.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir, testConfig } from '../helpers/app.js'
import { post } from '../helpers/inference.js'
import { cpuRuntime } from '../helpers/runtime.js'

t.test('a client that leaves mid-stream is logged as such at info, not as an unexpected error with a stack', async (t) => {
  const lines: Array<{ level: number, msg: string, err?: unknown }> = []
  const all: typeof lines = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) { lines.push(JSON.parse(l)); all.push(JSON.parse(l)) }
      done()
    },
  })
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: (await cpuRuntime()).binDir } },
    default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1, ignore_eos: true },
  })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  const file = (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf'), seed: 1 })).file
  await app.store.import('acme/tiny', file)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })

  for (const [path, body] of [
    ['/api/chat', { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 100_000 } }],
    ['/v1/chat/completions', { model: 'acme/tiny', stream: true, max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const) {
    const controller = new AbortController()
    const res = await post(`${url}${path}`, body, {}, controller.signal)
    const reader = res.body!.getReader()
    await reader.read() // the answer has begun
    controller.abort()
    await reader.read().catch(() => {})
    const deadline = Date.now() + 30_000
    while (!lines.some((l) => l.msg === 'client went away before the answer was complete') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    t.ok(lines.some((l) => l.level === 30 && l.msg === 'client went away before the answer was complete'), `${path}: said at info`)
    lines.splice(0)
  }
  // The relay notices the client's leaving itself; the native stream through its lease's signal. Either way:
  const errors = all.filter((l) => l.level >= 50)
  t.same(errors, [], 'nothing logged at error level')
  const idle = await (await fetch(`${url}/api/ps`)).json() as any
  t.equal(idle.models[0].active_requests, 0, 'the slots were given back')
})
