import { join } from 'node:path'
import t from 'tap'
import { RuntimeError } from '../../../core/base/errors.js'
import type { RelayProgress } from '../../../runtimes/endpoint/stream-relay.js'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
import { listUpstreamModels } from '../../../plugins/upstreams/upstream-client.js'
import { upstreamEndpoint } from '../../../plugins/upstreams/upstream-endpoint.js'
import { UpstreamProbe } from '../../../plugins/upstreams/upstream-probe.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'
import { upstream } from './fake-upstream.js'

// A real llama-server with an API key, used as an `openai` upstream: what the fakes stand in for, for real.

const never = new AbortController().signal
const KEY = 'sk-llama-server-key-4567'

t.test('a bare llama-server behind its own key, as an openai upstream: listed, answered whole and streamed, its key checked', async (t) => {
  const { file } = await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: file, alias: 'acme/tiny', ctxSize: 512, parallel: 1, threads: 1, extraArgs: ['--api-key', KEY] })
  t.teardown(() => server.stop())
  await server.start()
  const u = upstream({ name: 'bare', url: server.endpoint.address.baseUrl, kind: 'openai', key: KEY, maxConcurrent: 1 })

  t.same(await listUpstreamModels(u, never), ['acme/tiny'], 'its model id, from /v1/models')

  const endpoint = upstreamEndpoint(u, 'acme/tiny')
  t.teardown(() => endpoint.close())
  const ask = { model: 'bare/acme/tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4, temperature: 0 }
  const whole = await endpoint.postJson<{ choices: Array<{ message: { content: string } }>, usage: { completion_tokens: number } }>('/v1/chat/completions', ask, never)
  t.equal(whole.choices.length, 1)
  t.equal(typeof whole.choices[0]!.message.content, 'string')
  t.ok(whole.usage.completion_tokens >= 1)

  const chunks: Array<{ choices?: unknown[] }> = []
  for await (const event of await endpoint.events('/v1/chat/completions', { ...ask, stream: true }, never)) chunks.push(event as { choices?: unknown[] })
  t.ok(chunks.length >= 2, `${chunks.length} streamed events`)
  t.ok(chunks.some((c) => Array.isArray(c.choices) && c.choices.length > 0))

  const relayed: Buffer[] = []
  const progress: RelayProgress = { tailBytes: 64, tail: Buffer.alloc(0) }
  await endpoint.relay('/v1/chat/completions', JSON.stringify({ ...ask, stream: true }), {
    open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { relayed.push(Buffer.from(chunk)); return true }, drained: () => Promise.resolve(),
  }, progress, never)
  t.match(Buffer.concat(relayed).toString(), /^data: \{.*"choices"/)
  t.match(progress.tail.toString(), /data: \[DONE\]/)

  // The wrong key: llama-server refuses it; the error is the gateway's own (502), and does not quote the key.
  const wrong = upstreamEndpoint({ ...u, key: 'sk-wrong-key-8901' }, 'acme/tiny')
  t.teardown(() => wrong.close())
  const refused = await wrong.postJson('/v1/chat/completions', ask, never).then(() => new Error('answered'), (e: unknown) => e as Error)
  t.ok(refused instanceof RuntimeError)
  t.match(refused, { statusCode: 502, message: /^the runtime refused the gateway's credentials \(401\)/ })
  t.notMatch(refused.message, 'sk-wrong-key-8901')

  const probe = new UpstreamProbe(u, { intervalMs: 60_000 })
  t.teardown(() => probe.stop())
  probe.start()
  await until('the probe found it healthy', () => probe.state.healthy)
  t.same(probe.state.models, ['acme/tiny'])
})
