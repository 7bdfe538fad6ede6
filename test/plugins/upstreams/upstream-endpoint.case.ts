import { createServer as createHttpsServer } from 'node:https'
import t from 'tap'
import { GatewayError, RuntimeError } from '../../../core/base/errors.js'
import { upstreamEndpoint } from '../../../plugins/upstreams/upstream-endpoint.js'
import type { RelayProgress, RelaySink } from '../../../runtimes/endpoint/stream-relay.js'
import { fakeUpstream, json, upstream } from './fake-upstream.js'

// An upstream's model through its endpoint, whose client shares the local runtimes' transport: the URL's path, the
// upstream's key and its own model name go with every request, and nothing the endpoint throws quotes the key.

const never = new AbortController().signal
const KEY = 'sk-upstream-secret-0123'

/** A relay sink that keeps what it is given (unchunked: no client socket). */
function collectingSink (): RelaySink & { opened: boolean, bytes: () => string } {
  const chunks: Buffer[] = []
  const sink = {
    opened: false,
    open () { sink.opened = true },
    chunkedSocket: () => null,
    writeRaw (chunk: Buffer) { chunks.push(Buffer.from(chunk)); return true },
    drained: () => Promise.resolve(),
    bytes: () => Buffer.concat(chunks).toString('utf8'),
  }
  return sink
}
const progress = (): RelayProgress => ({ tailBytes: 64, tail: Buffer.alloc(0) })

/** A stand-in OpenAI-compatible engine under `/proxy`, answering whole and streamed completions. */
async function engine (t: Parameters<typeof fakeUpstream>[0]) {
  return fakeUpstream(t, (req, res) => {
    if (req.url !== '/proxy/v1/chat/completions') { json(res, 404, { error: `no route ${req.url}` }); return }
    const body = JSON.parse(req.body) as { model: string, stream?: boolean }
    if (!body.stream) { json(res, 200, { model: body.model, choices: [{ message: { content: 'hi' } }] }); return }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(`data: ${JSON.stringify({ model: body.model, n: 1 })}\n\n`)
    res.end(`data: ${JSON.stringify({ model: body.model, n: 2 })}\n\ndata: [DONE]\n\n`)
  })
}

t.test('post, postJson, events, relay: the path under the URL\'s, the Bearer key, the upstream\'s model name in the body', async (t) => {
  const fake = await engine(t)
  const endpoint = upstreamEndpoint(upstream({ name: 'vllm', url: `${fake.origin}/proxy`, kind: 'openai', key: KEY }), 'Qwen/Qwen3-32B')
  t.teardown(() => endpoint.close())
  t.equal(endpoint.name, 'Qwen/Qwen3-32B (upstream vllm)')

  const asked = { model: 'vllm/Qwen/Qwen3-32B', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 }
  t.same(await endpoint.postJson('/v1/chat/completions', asked, never), { model: 'Qwen/Qwen3-32B', choices: [{ message: { content: 'hi' } }] })
  t.same(JSON.parse(fake.received[0]!.body), { ...asked, model: 'Qwen/Qwen3-32B' }, 'only the model changed')
  t.equal(asked.model, 'vllm/Qwen/Qwen3-32B', 'the caller\'s body is left as it was')
  t.match(await endpoint.post('/v1/chat/completions', asked, never), /"model":"Qwen\/Qwen3-32B"/)

  const events: unknown[] = []
  for await (const event of await endpoint.events('/v1/chat/completions', { ...asked, stream: true }, never)) events.push(event)
  t.same(events, [{ model: 'Qwen/Qwen3-32B', n: 1 }, { model: 'Qwen/Qwen3-32B', n: 2 }])

  const sink = collectingSink()
  const relayed = progress()
  await endpoint.relay('/v1/chat/completions', JSON.stringify({ ...asked, stream: true }), sink, relayed, never)
  t.ok(sink.opened)
  t.match(sink.bytes(), /^data: \{"model":"Qwen\/Qwen3-32B","n":1\}\n\ndata: \{"model":"Qwen\/Qwen3-32B","n":2\}\n\ndata: \[DONE\]\n\n$/)
  t.match(relayed.tail.toString(), /\[DONE\]/)

  t.equal(fake.received.length, 4)
  for (const req of fake.received) {
    t.same([req.method, req.url, req.authorization], ['POST', '/proxy/v1/chat/completions', `Bearer ${KEY}`])
    t.equal((JSON.parse(req.body) as { model: string }).model, 'Qwen/Qwen3-32B')
  }
})

// GETs go under the URL's path too: test/runtimes/endpoint/http-pool.case.ts (an upstream's model makes none).
t.test('with no key no Authorization goes', async (t) => {
  const fake = await fakeUpstream(t, (_req, res) => { res.end('{}') })
  const endpoint = upstreamEndpoint(upstream({ url: `${fake.origin}/o`, kind: 'ollama' }), 'llama3:latest')
  t.teardown(() => endpoint.close())
  t.same(await endpoint.postJson('/v1/chat/completions', { model: 'x' }, never), {})
  t.same(fake.received.map((r) => [r.method, r.url, r.authorization]), [['POST', '/o/v1/chat/completions', null]])
  t.same(JSON.parse(fake.received[0]!.body), { model: 'llama3:latest' })
})

t.test('the upstream\'s errors: the gateway\'s runtime errors, with the key cut out of their words', async (t) => {
  const fake = await fakeUpstream(t, (req, res) => {
    const echoed = `you sent ${req.authorization}`
    if (req.url === '/bad') json(res, 400, { error: { message: `bad request; ${echoed}` } })
    else if (req.url === '/key') json(res, 401, { error: { message: `invalid key; ${echoed}` } })
    else json(res, 500, { error: `broken; ${echoed}` })
  })
  const endpoint = upstreamEndpoint(upstream({ name: 'vllm', url: fake.origin, kind: 'openai', key: KEY }), 'm')
  t.teardown(() => endpoint.close())
  const failures = await Promise.all(['/bad', '/key', '/boom'].map((path) => endpoint.postJson(path, {}, never).then(() => new Error('answered'), (e: unknown) => e as GatewayError)))
  const relayed = await endpoint.relay('/key', '{"stream":true}', collectingSink(), progress(), never).then(() => new Error('answered'), (e: unknown) => e as GatewayError)
  t.match(failures[0], { statusCode: 400, code: 'runtime_rejected', message: 'bad request; you sent <redacted>' }, 'a 4xx is the request\'s fault')
  t.ok(failures[1] instanceof RuntimeError, 'a refused key is the gateway\'s own fault, not the client\'s')
  t.match(failures[1], { statusCode: 502, message: 'the runtime refused the gateway\'s credentials (401): invalid key; you sent <redacted>' })
  t.match(failures[2], { statusCode: 502, message: 'broken; you sent <redacted>' })
  t.match(relayed, { statusCode: 502, message: /^the runtime refused the gateway's credentials \(401\)/ }, 'the relay too')
  for (const err of [...failures, relayed]) {
    t.notMatch(err.message, KEY)
    t.notMatch(err.stack, KEY)
  }
})

// Made once with openssl (EC P-256, CN=localhost, 100 years): no CA vouches for it.
const SELF_SIGNED = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgsszSoXPevo+xP3ya
SoOnMEAS5+Pk0DmenEkt0s0UDdOhRANCAARLigyrSeFxQ2pCbyOKcUMPnF4/XPdq
KLWBZdB7ojFABref8xY9EsNyCzHzEgkjVJ6ds/U3ZjZfLK2ZlIBzkpTo
-----END PRIVATE KEY-----
`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBfjCCASWgAwIBAgIUJnZScJqRHs2GHkTdnekJ/A3wCrQwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNjAxMzk0N1oYDzIxMjYxMTAy
MDEzOTQ3WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARLigyrSeFxQ2pCbyOKcUMPnF4/XPdqKLWBZdB7ojFABref8xY9EsNy
CzHzEgkjVJ6ds/U3ZjZfLK2ZlIBzkpToo1MwUTAdBgNVHQ4EFgQUSYcj/amGyEvc
uBV7Q0UmLnoPhnkwHwYDVR0jBBgwFoAUSYcj/amGyEvcuBV7Q0UmLnoPhnkwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBw+uOUOXp725MRdDOhR0is
BWPhgS21XDaVMqHzXWuM5QIgO2N2rwI3OoOlkSi90LkXGqOqmfa2nPZH8dhnfu3y
LpA=
-----END CERTIFICATE-----
`,
}

t.test('an https upstream is spoken to over TLS, its certificate checked: a self-signed one is refused by pool and relay alike', async (t) => {
  let answered = 0
  const server = createHttpsServer(SELF_SIGNED, (_req, res) => { answered++; res.end('{}') })
  let handshakes = 0
  server.on('tlsClientError', () => { handshakes++ })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const endpoint = upstreamEndpoint(upstream({ url: `https://localhost:${(server.address() as { port: number }).port}/p`, kind: 'openai', maxConcurrent: 1 }), 'm')
  t.teardown(() => endpoint.close())
  const certificate = /CERT|SELF_SIGNED|certificate/i
  const pooled = await endpoint.postJson('/x', {}, never).catch((e: { code?: string, message: string }) => e)
  t.match(`${(pooled as { code?: string }).code} ${(pooled as Error).message}`, certificate)
  const relayed = await endpoint.relay('/x', '{}', collectingSink(), progress(), never).catch((e: { code?: string, message: string }) => e)
  t.match(`${(relayed as { code?: string }).code} ${(relayed as Error).message}`, certificate)
  t.equal(answered, 0, 'nothing was sent in the clear, and nothing past the handshake')
  t.ok(handshakes >= 1, 'the server saw TLS handshakes')
})
