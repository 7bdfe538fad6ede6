import { connect } from 'node:net'
import t from 'tap'
import { importLongContextModel, post, serveTinyModels, sseEvents } from '../../helpers/inference.js'

// The streamed /v1 path relays llama-server's chunks verbatim over its own socket (runtimes/endpoint/stream-relay.ts).

t.test('a runtime that refuses a streamed request: its status and words, in OpenAI shape, before any event', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 64, num_parallel: 1 } })
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, messages: [{ role: 'user', content: 'word '.repeat(3000) }] })
  t.equal(res.status, 400)
  t.match(res.headers.get('content-type'), /application\/json/)
  const body = await res.json() as any
  t.equal(body.error.type, 'invalid_request_error')
  t.match(body.error.message, /context|exceed/i, 'llama-server\'s own reason')
  const ok = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, messages: [{ role: 'user', content: 'x' }], max_tokens: 3 })
  t.equal((await sseEvents(ok)).at(-1), '[DONE]', 'the next stream works')
})

t.test('an HTTP/1.0 client (no chunked coding) gets the same events, unframed, and the end of the connection', async (t) => {
  const { url } = await serveTinyModels(t)
  const { port } = new URL(url)
  const body = JSON.stringify({ model: 'acme/tiny', stream: true, messages: [{ role: 'user', content: 'x' }], max_tokens: 5 })
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1')
    const parts: Buffer[] = []
    socket.on('data', (d) => parts.push(d))
    socket.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    socket.on('error', reject)
    socket.write(`POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  })
  const [head, ...rest] = raw.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.[01] 200/)
  t.notMatch(head, /transfer-encoding/i)
  const text = rest.join('\r\n\r\n')
  t.notMatch(text, /^[0-9a-f]+\r\n/m, 'no chunk sizes in the body')
  const events = text.split('\n\n').filter((e) => e !== '' && !e.startsWith(': '))
  t.equal(events.at(-1), 'data: [DONE]')
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)))
  t.ok(chunks.every((c) => c.object === 'chat.completion.chunk'))
  t.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'length')
})

t.test('a /v1 client that disconnects mid-stream frees its slot at once', async (t) => {
  // llama-server checks for a gone client once a second (HTTP_POLLING_SECONDS) while it waits on a slot's
  // results (1,040 ms was seen). The generation cut is of 8,000 tokens on a model whose training context lets
  // it run (the default tiny model's 2,048 would end it after a few seconds): on one thread, a minute or more,
  // each token dearer than the last. 10 s tells "freed at once" from "freed when it ended" on a loaded machine.
  const { app, url } = await serveTinyModels(t, [], { default_options: { num_parallel: 1, num_ctx: 8192 } })
  await importLongContextModel(t, app, 'acme/long')
  const controller = new AbortController()
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', stream: true, messages: [{ role: 'user', content: 'go on' }], max_tokens: 8000 }, {}, controller.signal)
  const reader = res.body!.getReader()
  await reader.read()
  controller.abort()
  const started = performance.now()
  const next = await post(`${url}/v1/chat/completions`, { model: 'acme/long', stream: true, messages: [{ role: 'user', content: 'next' }], max_tokens: 3 })
  t.equal((await sseEvents(next)).at(-1), '[DONE]')
  const waited = performance.now() - started
  t.ok(waited < 10_000, `the next stream was served within 10 s (took ${Math.round(waited)} ms)`)
})

t.test('many streams at once each get their own whole stream', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_parallel: 4 } })
  const results = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: `n${i}` }], max_tokens: 20 + i })
    return sseEvents(res)
  }))
  results.forEach((events, i) => {
    t.equal(events.at(-1), '[DONE]')
    const usage = events.at(-2) as any
    t.equal(usage.usage.completion_tokens, 20 + i, `stream ${i} has its own ${20 + i} tokens`)
    t.equal(new Set(events.slice(0, -1).map((e: any) => e.id)).size, 1, `stream ${i}: one id`)
  })
})
