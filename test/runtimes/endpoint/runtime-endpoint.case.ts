import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import t from 'tap'
import { RuntimeError } from '../../../core/base/errors.js'
import { RuntimeEndpoint } from '../../../runtimes/endpoint/runtime-endpoint.js'
import { withBodyFields } from '../../../runtimes/endpoint/model-endpoint.js'
import type { RelaySink } from '../../../runtimes/endpoint/stream-relay.js'
import type { tempDir } from '../../helpers/app.js'

type Test = Parameters<typeof tempDir>[0]

/**
 * A stand-in upstream on a loopback port, for the faults a real llama-server cannot be made to show on cue
 * (a kept connection closed under a request). Counts requests and connections.
 */
async function upstream (t: Test, handle: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<{ endpoint: RuntimeEndpoint, requests: () => number, connections: () => number, sockets: Socket[] }> {
  let requests = 0
  const sockets: Socket[] = []
  const server = createServer((req, res) => { handle(req, res, ++requests) })
  server.on('connection', (socket) => sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const port = (server.address() as { port: number }).port
  const endpoint = new RuntimeEndpoint({ name: 'acme/tiny', slots: 2, address: { baseUrl: `http://127.0.0.1:${port}`, socketPath: null } })
  t.teardown(() => endpoint.close())
  return { endpoint, requests: () => requests, connections: () => sockets.length, sockets }
}

const never = new AbortController().signal

t.test('whole answers reuse a few kept-alive connections; after close() nothing reaches the runtime', async (t) => {
  const up = await upstream(t, (_req, res) => res.end('{"ok":true}'))
  t.equal(up.connections(), 0, 'no connection before the first request (the pool is made on first use)')
  t.same(await up.endpoint.postJson('/x', {}, never), { ok: true })
  t.equal(await up.endpoint.post('/x', {}, never), '{"ok":true}')
  for (let i = 0; i < 18; i++) await up.endpoint.post('/x', {}, never)
  t.ok(up.connections() <= 4, `20 requests over ${up.connections()} kept connection(s): at most the 2 slots and 2 spare`)
  await up.endpoint.close()
  await t.rejects(up.endpoint.post('/x', {}, never), { name: 'ClientDestroyedError' })
  t.equal(up.requests(), 20, 'only the requests made before the close reached the runtime')
})

t.test('an endpoint closed before its first request makes no pool that stays open', async (t) => {
  const up = await upstream(t, (_req, res) => res.end('{}'))
  await up.endpoint.close()
  await t.rejects(up.endpoint.post('/x', {}, never), { name: 'ClientDestroyedError' }, 'a pool first asked for after the close comes closed')
  t.equal(up.connections(), 0)
})

t.test('a kept connection the runtime closed as the request went out: sent once more on a fresh one', async (t) => {
  const up = await upstream(t, (req, res, n) => {
    // The second request arrives on the first one's kept connection: drop it without an answer, as
    // llama-server does when its keep-alive timer fires at that moment.
    if (n === 2) { req.socket.destroy(); return }
    res.end(JSON.stringify({ n }))
  })
  t.same(await up.endpoint.postJson('/x', {}, never), { n: 1 })
  t.same(await up.endpoint.postJson('/x', {}, never), { n: 3 }, 'the retry answered')
  t.equal(up.requests(), 3)
  t.equal(up.connections(), 2, 'on a fresh connection')
})

t.test('the runtime\'s refusals keep its words: 4xx is the client\'s (400), 5xx the runtime\'s (RuntimeError, 502)', async (t) => {
  const up = await upstream(t, (req, res) => {
    res.statusCode = req.url === '/bad' ? 400 : 500
    res.end(req.url === '/bad' ? '{"error":{"message":"the request exceeds the available context size"}}' : 'not json')
  })
  await t.rejects(up.endpoint.post('/bad', {}, never), { statusCode: 400, code: 'runtime_rejected', message: 'the request exceeds the available context size' })
  const err = await up.endpoint.post('/broken', {}, never).catch((e: unknown) => e)
  t.ok(err instanceof RuntimeError)
  t.match(err, { statusCode: 502, message: 'runtime answered 500' })
})

t.test('events(): resolves once the status is good, then yields each event parsed, up to [DONE]', async (t) => {
  const up = await upstream(t, (req, res) => {
    if (req.url === '/refuse') { res.statusCode = 400; res.end('{"error":"no"}'); return }
    res.setHeader('content-type', 'text/event-stream')
    // An event cut across writes, a multi-byte character split between them, a comment line.
    res.write('data: {"a":1}\n\n: ping\n\ndata: {"b":"')
    res.write(Buffer.from([0xc3]))
    res.write(Buffer.concat([Buffer.from([0xa9]), Buffer.from('"}\n\ndata: [DONE]\n\ndata: {"after":true}\n\n')]))
    res.end()
  })
  await t.rejects(up.endpoint.events('/refuse', {}, never), { statusCode: 400, message: 'no' }, 'a refusal comes before any event')
  const seen: unknown[] = []
  for await (const event of await up.endpoint.events('/stream', {}, never)) seen.push(event)
  t.same(seen, [{ a: 1 }, { b: 'é' }], 'nothing after [DONE]')
})

t.test('a request whose signal is aborted ends with the signal\'s reason, not a connection error', async (t) => {
  const up = await upstream(t, () => { /* never answers */ })
  const controller = new AbortController()
  const reason = new Error('client disconnected')
  const pending = up.endpoint.post('/slow', {}, controller.signal)
  setTimeout(() => controller.abort(reason), 50)
  await t.rejects(pending, reason)
})

t.test('withBodyFields: every body sent through the view carries the fields, over the body\'s own; the endpoint itself does not', async (t) => {
  const bodies: unknown[] = []
  const up = await upstream(t, (req, res) => {
    let text = ''
    req.on('data', (c: Buffer) => { text += c.toString() })
    req.on('end', () => {
      bodies.push(JSON.parse(text))
      if (req.url === '/stream') { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.end('data: {"n":1}\n\ndata: [DONE]\n\n'); return }
      res.end('{"ok":true}')
    })
  })
  const view = withBodyFields(up.endpoint, { cache_salt: 'abc', cache_prompt: false })
  await view.post('/x', { prompt: 'hi', cache_prompt: true }, never)
  await view.postJson('/x', { prompt: 'again' }, never)
  for await (const _event of await view.events('/stream', { stream: true }, never));
  const sink: RelaySink = { open: () => {}, chunkedSocket: () => null, writeRaw: () => true, drained: async () => {} }
  await view.relay('/stream', JSON.stringify({ messages: [], cache_prompt: true }), sink, { tailBytes: 64, tail: Buffer.alloc(0) }, never)
  await view.relay('/stream', '{}', sink, { tailBytes: 64, tail: Buffer.alloc(0) }, never)
  await up.endpoint.post('/x', { prompt: 'plain' }, never)
  t.same(bodies, [
    { prompt: 'hi', cache_prompt: false, cache_salt: 'abc' },
    { prompt: 'again', cache_salt: 'abc', cache_prompt: false },
    { stream: true, cache_salt: 'abc', cache_prompt: false },
    // A serialized body gets them appended: JSON's last member of a name wins, as llama-server's parser reads it.
    { messages: [], cache_prompt: false, cache_salt: 'abc' },
    { cache_salt: 'abc', cache_prompt: false },
    { prompt: 'plain' },
  ])
})
