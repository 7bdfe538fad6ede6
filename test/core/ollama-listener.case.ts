import { request as httpRequest } from 'node:http'
import { createServer, connect } from 'node:net'
import t from 'tap'
import { buildApp } from '../../core/server/app.js'
import { ConfigError, resolveConfig } from '../../core/platform/config.js'
import { build, testConfig } from '../helpers/app.js'
import { ndjsonEvents, post, serveTinyModels, sseEvents } from '../helpers/inference.js'

// ollama_listen: the same app on a second address, where native streams are NDJSON unless the client asks for SSE
// (Ollama's clients read NDJSON without asking); the main address keeps the spec's SSE default.

const CHAT = { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } }

/** A GET with the Host and Origin headers a test chooses (fetch sets Host itself). */
function get (url: string, headers: Record<string, string>): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { headers }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk) => { body += chunk }).on('end', () => resolve({ status: res.statusCode!, body }))
    }).on('error', reject).end()
  })
}

/** Whether something takes connections on the port. */
function accepts (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) }).once('error', () => resolve(false))
  })
}

t.test('native streams: NDJSON by default on the Ollama address, SSE when asked; the main address unchanged', async (t) => {
  const { app, url: main } = await serveTinyModels(t, ['acme/tiny'], { ollama_listen: '127.0.0.1:0' })
  const ollama = app.ollamaListener!.url
  t.match(ollama, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.not(ollama, main)
  t.ok(app.startupNotes.includes(`Ollama's clients on ${ollama} (native streams NDJSON unless asked for SSE)`), 'the start-up log says where')

  const formats: Array<[string, string, Record<string, string>, 'ndjson' | 'sse']> = [
    [ollama, 'no Accept', {}, 'ndjson'],
    [ollama, 'Accept: */* (the AI SDK\'s provider)', { accept: '*/*' }, 'ndjson'],
    [ollama, 'Accept: application/json', { accept: 'application/json' }, 'ndjson'],
    [ollama, 'Accept: text/event-stream', { accept: 'text/event-stream' }, 'sse'],
    [main, 'no Accept', {}, 'sse'],
    [main, 'Accept: */* (curl)', { accept: '*/*' }, 'sse'],
    [main, 'Accept: application/x-ndjson', { accept: 'application/x-ndjson' }, 'ndjson'],
  ]
  for (const [base, what, headers, format] of formats) {
    const where = base === ollama ? 'Ollama address' : 'main address'
    for (const path of ['/api/chat', '/api/generate']) {
      const body = path === '/api/chat' ? CHAT : { model: 'acme/tiny', prompt: 'once', options: { num_predict: 3 } }
      const res = await post(`${base}${path}`, body, headers)
      t.equal(res.status, 200)
      t.match(res.headers.get('content-type'), format === 'sse' ? /^text\/event-stream/ : /^application\/x-ndjson/, `${where}, ${what}: ${path} streams ${format}`)
      const events = format === 'sse' ? await sseEvents(res) : await ndjsonEvents(res)
      t.match(events.at(-1), { done: true, eval_count: 3 }, 'a whole answer')
    }
  }

  // /v1 keeps OpenAI's SSE on either address; everything else answers the same.
  const openai = await post(`${ollama}/v1/chat/completions`, { ...CHAT, stream: true })
  t.match(openai.headers.get('content-type'), /^text\/event-stream/, '/v1 streams stay SSE on the Ollama address')
  t.equal((await sseEvents(openai)).at(-1), '[DONE]')
  const tags = await Promise.all([main, ollama].map(async (base) => (await fetch(`${base}/api/tags`)).json()))
  t.same(tags[1], tags[0], 'the same app behind both')
})

t.test('security on the Ollama address: its own Host guard, API keys, CORS', async (t) => {
  // The main address on every interface (no Host guard there), the Ollama one on loopback (guarded).
  const app = await build(t, { host: '0.0.0.0', ollama_listen: '127.0.0.1:0', auth: { api_keys: ['sekret'] } })
  const main = await app.listen({ host: '127.0.0.1', port: 0 })
  const ollama = app.ollamaListener!.url
  const port = new URL(ollama).port
  const key = { authorization: 'Bearer sekret' }

  const rebinding = await get(`${ollama}/api/tags`, { ...key, host: `evil.example:${port}` })
  t.equal(rebinding.status, 403, 'a foreign Host on the loopback Ollama address')
  t.match(JSON.parse(rebinding.body).error, /host "evil\.example" is not allowed on a server bound to 127\.0\.0\.1/)
  t.equal((await get(`${main}/api/tags`, { ...key, host: 'evil.example:11435' })).status, 200, 'the main address, on 0.0.0.0, takes any Host')
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) t.equal((await get(`${ollama}/api/tags`, { ...key, host })).status, 200, `${host} is allowed`)

  t.equal((await get(`${ollama}/api/tags`, {})).status, 401, 'no key: 401')
  t.equal((await get(`${ollama}/api/version`, {})).status, 200, 'the probes stay public')
  t.equal((await get(`${ollama}/api/tags`, { ...key, origin: 'https://evil.example' })).status, 403, 'a foreign Origin')
  t.equal((await get(`${ollama}/api/tags`, { ...key, origin: 'http://localhost:3000' })).status, 200, 'an allowed Origin')
})

t.test('the Ollama address closes with the app: the port is free again', async (t) => {
  const app = await build(t, { ollama_listen: '127.0.0.1:0' })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = Number(new URL(app.ollamaListener!.url).port)
  // A kept-alive connection with nothing in flight must not hold the close up.
  t.equal((await fetch(`${app.ollamaListener!.url}/api/health`)).status, 200)
  t.ok(await accepts(port), 'listening')
  await app.close()
  t.notOk(await accepts(port), 'nothing takes connections there after app.close()')
  const again = createServer()
  await new Promise<void>((resolve, reject) => again.once('error', reject).listen(port, '127.0.0.1', resolve))
  t.pass('the port can be listened on again')
  again.close()
})

t.test('a connection to the Ollama address before the app listens is answered once it does, or closed with the app', async (t) => {
  const rawGet = async (url: string): Promise<{ socket: ReturnType<typeof connect>, answer: Promise<string> }> => {
    const { port } = new URL(url)
    const socket = connect(Number(port), '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    let text = ''
    // A connection closed with its request unread is reset: the error is the close, seen from here.
    socket.on('error', () => {})
    const answer = new Promise<string>((resolve) => socket.setEncoding('utf8').on('data', (chunk) => { text += chunk }).once('close', () => resolve(text)))
    return { socket, answer }
  }
  const app = await build(t, { ollama_listen: '127.0.0.1:0' })
  const early = await rawGet(app.ollamaListener!.url)
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.match(await early.answer, /^HTTP\/1\.1 200 OK\r\n[^]*\{"status":"ok"\}$/, 'answered')

  const never = await build(t, { ollama_listen: '127.0.0.1:0' })
  const held = await rawGet(never.ollamaListener!.url)
  await never.close()
  t.equal(await held.answer, '', 'closed unanswered with an app that never listened')
})

t.test('drain and /readyz on the Ollama address', async (t) => {
  const { app } = await serveTinyModels(t, ['acme/tiny'], { ollama_listen: '127.0.0.1:0' })
  const ollama = app.ollamaListener!.url
  t.equal((await fetch(`${ollama}/readyz`)).status, 200, 'ready')
  // An answer in flight on the Ollama address is waited for like any other: a long one, so that it is still
  // being generated when its headers are read (24 tokens were, once, all written by then).
  const inFlight = post(`${ollama}/api/chat`, { ...CHAT, options: { num_predict: 200 } })
  const res = await inFlight
  const drained = app.lifecycle.drain(30_000)
  t.equal(app.lifecycle.inFlight, 1, 'the streamed answer on the Ollama address is counted')
  const events = await ndjsonEvents(res)
  t.equal(await drained, 'drained', 'the drain waited for it')
  t.match(events.at(-1), { done: true, eval_count: 200 }, 'and it ended whole')
  const ready = await fetch(`${ollama}/readyz`)
  t.equal(ready.status, 503)
  t.match(await ready.json(), { status: 'not ready', reasons: ['draining: the server is shutting down'] })
  const refused = await post(`${ollama}/api/chat`, CHAT)
  t.equal(refused.status, 503, 'new work is refused there too')
  t.equal(refused.headers.get('retry-after'), '5')
})

t.test('configuration: the key, its environment variable, and mistakes stopped at start', async (t) => {
  const resolved = (values: Record<string, unknown>): unknown => resolveConfig([{ source: 'test', values }]).ollamaListen
  t.same(resolved({ ollama_listen: '[::1]:11434' }), { host: '::1', port: 11434, required: true }, 'an address named: required')
  t.same(resolveConfig([]).ollamaListen, { host: '127.0.0.1', port: 11434, required: false }, 'by default (auto): Ollama\'s own address, not required')
  t.same(resolved({ ollama_listen: 'auto' }), { host: '127.0.0.1', port: 11434, required: false }, 'auto')
  t.equal(resolved({ ollama_listen: 'auto', port: 11434 }), null, 'auto with the main port on Ollama\'s: none (the main address serves them)')
  t.equal(resolved({ ollama_listen: 'off' }), null, 'off')
  t.equal(resolved({ ollama_listen: null }), null, 'null, as before auto')
  const { loadConfig } = await import('../../core/platform/config.js')
  t.same(loadConfig({}, {}).ollamaListen, { host: '127.0.0.1', port: 11434, required: false }, 'the shipped config.yaml: auto')
  t.same(loadConfig({}, { LLAMAGATE_OLLAMA_LISTEN: '127.0.0.1:11434' }).ollamaListen, { host: '127.0.0.1', port: 11434, required: true }, 'LLAMAGATE_OLLAMA_LISTEN')
  t.equal(loadConfig({}, { LLAMAGATE_OLLAMA_LISTEN: 'off' }).ollamaListen, null, 'LLAMAGATE_OLLAMA_LISTEN=off')
  const refused = (values: Record<string, unknown>): string => {
    try {
      resolveConfig([{ source: 'config.yaml', values }])
    } catch (err) {
      if (err instanceof ConfigError) return err.message
      throw err
    }
    return 'accepted'
  }
  t.match(refused({ ollama_listen: '11434' }), /ollama_listen = "11434" is not allowed: must be "auto" \(Ollama's own 127\.0\.0\.1:11434 when free\), "off" \(or null\), or an address and port such as "127\.0\.0\.1:11434"/)
  t.equal(refused({ ollama_listen: 'auto', metrics: { listen: '127.0.0.1:11434' } }), 'accepted', 'auto beside metrics on 11434: the start says the port is taken')
  t.match(refused({ ollama_listen: '127.0.0.1:70000' }), /ollama_listen = "127\.0\.0\.1:70000" is not allowed: the port must be 0-65535 \(from config\.yaml\)/)
  t.match(refused({ ollama_listen: '127.0.0.1:11435' }), /ollama_listen = "127\.0\.0\.1:11435" is not allowed: port uses port 11435 already/)
  t.match(refused({ ollama_listen: '127.0.0.1:9464', metrics: { listen: '127.0.0.1:9464' } }), /metrics\.listen uses port 9464 already/)

  // A port in use, an address that is not this machine's: the app does not start, and says why.
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => taken.close())
  const port = (taken.address() as { port: number }).port
  const startError = async (address: string): Promise<unknown> => buildApp(await testConfig(t, { ollama_listen: address })).then(async (app) => { await app.close(); return 'started' }, (err: unknown) => err)
  const inUse = await startError(`127.0.0.1:${port}`)
  t.type(inUse, ConfigError)
  t.same((inUse as ConfigError).problems, [`ollama_listen = "127.0.0.1:${port}": cannot listen there: the port is in use (another Ollama server, or llamagate already running?)`])
  const elsewhere = await startError('192.0.2.1:11434')
  t.type(elsewhere, ConfigError)
  t.same((elsewhere as ConfigError).problems, ['ollama_listen = "192.0.2.1:11434": cannot listen there: this machine has no such address'])
})
