import { fileURLToPath } from 'node:url'
import t from 'tap'
import { negotiateStreamFormat } from '../../core/server/event-stream.js'
import { build } from '../helpers/app.js'

const STREAM_PLUGIN = fileURLToPath(new URL('../fixtures/plugins/stream-plugin.js', import.meta.url))

t.test('format negotiation follows the contract', async (t) => {
  t.equal(negotiateStreamFormat(undefined, 'sse'), 'sse')
  t.equal(negotiateStreamFormat(undefined, 'ndjson'), 'ndjson')
  t.equal(negotiateStreamFormat('text/event-stream', 'ndjson'), 'sse')
  t.equal(negotiateStreamFormat('application/x-ndjson', 'sse'), 'ndjson')
  t.equal(negotiateStreamFormat('application/json', 'sse'), 'ndjson', 'what Ollama clients send')
  t.equal(negotiateStreamFormat('application/json, text/event-stream', 'ndjson'), 'sse')
  t.equal(negotiateStreamFormat('*/*', 'sse'), 'sse', 'curl')
})

t.test('SSE: one data line per event, headers for streaming', async (t) => {
  const app = await build(t, { plugins: [{ path: STREAM_PLUGIN }] })
  const res = await app.inject({ method: 'POST', url: '/api/stream', payload: { count: 2 } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/event-stream/)
  t.equal(res.headers['cache-control'], 'no-cache')
  t.equal(res.headers['x-accel-buffering'], 'no')
  t.equal(res.body, 'data: {"i":0,"text":"héllo 日本"}\n\ndata: {"i":1,"text":"héllo 日本"}\n\n')
})

t.test('NDJSON when the client asks for it', async (t) => {
  const app = await build(t, { plugins: [{ path: STREAM_PLUGIN }] })
  const res = await app.inject({ method: 'POST', url: '/api/stream', headers: { accept: 'application/x-ndjson' }, payload: { count: 2 } })
  t.match(res.headers['content-type'], /^application\/x-ndjson/)
  t.match(res.headers.vary, /^Origin, Accept$/, 'the format Accept chose: a cache must tell the answers apart (CORS\'s Origin kept)')
  const openai = await app.inject({ method: 'POST', url: '/v1/stream', headers: { accept: 'application/x-ndjson' }, payload: { count: 1 } })
  t.equal(openai.headers.vary, 'Origin', 'OpenAI streams are SSE whatever Accept says')
  t.same(res.body.trimEnd().split('\n').map((l) => JSON.parse(l)), [{ i: 0, text: 'héllo 日本' }, { i: 1, text: 'héllo 日本' }])
})

t.test('a failure mid-stream ends with an error event in the surface shape', async (t) => {
  const app = await build(t, { plugins: [{ path: STREAM_PLUGIN }] })
  const native = await app.inject({ method: 'POST', url: '/api/stream', payload: { count: 1, outcome: 'fail' } })
  t.equal(native.statusCode, 200, 'the status was sent with the first event')
  const events = native.body.split('\n\n').filter(Boolean)
  t.equal(events.length, 2)
  t.same(JSON.parse(events[1]!.replace(/^data: /, '')), { error: 'runtime died mid-stream' })
  const openai = await app.inject({ method: 'POST', url: '/v1/stream', payload: { count: 1, outcome: 'fail' } })
  const last = JSON.parse(openai.body.split('\n\n').filter(Boolean).at(-1)!.replace(/^data: /, ''))
  t.equal(last.error.message, 'runtime died mid-stream')
  t.equal(last.error.type, 'server_error')
  t.notMatch(openai.body, /\[DONE\]/, 'a failed stream does not pretend to be done')
})

t.test('a failure before the first event is a real HTTP error', async (t) => {
  const app = await build(t, { plugins: [{ path: STREAM_PLUGIN }] })
  const res = await app.inject({ method: 'POST', url: '/api/stream', payload: { outcome: 'fail-early' } })
  t.equal(res.statusCode, 502)
  t.same(res.json(), { error: 'runtime failed before the first event' })
})

t.test('a client that disconnects aborts the stream signal', async (t) => {
  let aborted!: () => void
  const abortSeen = new Promise<void>((resolve) => { aborted = resolve })
  const app = await build(t, { plugins: [{ path: STREAM_PLUGIN, options: { onAbort: () => aborted() } }] })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  const controller = new AbortController()
  const res = await fetch(`${address}/api/stream`, { method: 'POST', body: JSON.stringify({ count: 1, outcome: 'wait' }), signal: controller.signal })
  const reader = res.body!.getReader()
  const first = await reader.read()
  t.match(Buffer.from(first.value!).toString(), /^data: \{"i":0/)
  controller.abort()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('abort not seen within 10 s')), 10_000) })
  await Promise.race([abortSeen, timeout]).finally(() => clearTimeout(timer))
  t.pass('the server saw the disconnect')
})
