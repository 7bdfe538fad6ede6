// Clients that never read a stream, an attack on the slots: each held a runtime slot for as long as it kept its
// connection (four such sockets: every slot busy, a fifth request timed out, llama-server idle). A stream whose
// client reads nothing for limits.stream_stall_timeout is cut off and its slot freed.
import { connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import { resolveConfig } from '../../core/platform/config.js'
import { whenDrained } from '../../core/base/when-drained.js'
import { importLongContextModel, serveTinyModels } from '../helpers/inference.js'
import { until } from '../helpers/until.js'
import { usualMs, withinUsualTime } from '../helpers/usual-time.js'

/** A connected pair of real sockets on loopback: the server's end and the client's. */
async function socketPair (t: { teardown: (fn: () => void) => void }): Promise<{ server: Socket, client: Socket }> {
  const listener = createServer()
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  const accepted = new Promise<Socket>((resolve) => listener.once('connection', resolve))
  const client = connect((listener.address() as { port: number }).port, '127.0.0.1')
  const server = await accepted
  t.teardown(() => { client.destroy(); server.destroy(); listener.close() })
  return { server, client }
}

/** Writes to `socket` until it is backed up (its reader takes nothing). */
function fill (socket: Socket): void {
  const chunk = Buffer.alloc(1 << 20)
  while (socket.write(chunk));
}

t.test('whenDrained: a reader that takes nothing for the stall limit is cut off; one that reads is not', async (t) => {
  const stalled = await socketPair(t)
  stalled.client.pause()
  fill(stalled.server)
  const started = Date.now()
  await whenDrained(stalled.server, 300)
  t.ok(stalled.server.destroyed, 'the stalled socket is destroyed')
  t.ok(Date.now() - started >= 250, 'after the limit, not before')

  const reading = await socketPair(t)
  reading.client.pause()
  fill(reading.server)
  const drained = whenDrained(reading.server, 5_000)
  reading.client.resume()
  await drained
  t.notOk(reading.server.destroyed, 'a socket that drained is left alone')
})

t.test('limits.stream_stall_timeout: 60 s by default, a duration, never 0', async (t) => {
  t.equal(resolveConfig([]).limits.streamStallMs, 60_000)
  t.equal(resolveConfig([{ source: 'test', values: { limits: { stream_stall_timeout: '5s' } } }]).limits.streamStallMs, 5_000)
  t.throws(() => resolveConfig([{ source: 'test', values: { limits: { stream_stall_timeout: 0 } } }]), /limits\.stream_stall_timeout must be longer than 0/)
})

t.test('streams nobody reads: cut at the stall limit, their slots freed, the next client answered', async (t) => {
  const { app, url } = await serveTinyModels(t, [], { limits: { stream_stall_timeout: '1s' }, default_options: { num_ctx: 16_384, num_parallel: 2, max_tokens: 8_000 } })
  await importLongContextModel(t, app, 'acme/long')
  const { port } = new URL(url)
  const normalChat = async (): Promise<Response> => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/long', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }) })
  const usual = await usualMs(async () => (await normalChat()).json())
  // Two raw connections ask for long streams with 20 alternatives a token (over a kilobyte an event), and read nothing.
  const body = JSON.stringify({ model: 'acme/long', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 8_000, logprobs: true, top_logprobs: 20 })
  const sockets: Socket[] = []
  for (let i = 0; i < 2; i++) {
    const socket = connect(Number(port), '127.0.0.1')
    t.teardown(() => socket.destroy())
    socket.pause()
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    sockets.push(socket)
  }
  const ps = async (): Promise<{ active_requests: number, queued_requests: number } | undefined> =>
    ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string, active_requests: number, queued_requests: number }> }).models.find((m) => m.name === 'acme/long')
  await until('both slots taken by the non-readers', async () => (await ps())?.active_requests === 2)
  // A normal client meanwhile waits in line until a non-reader is cut (the stall limit once its connection's
  // buffers are full: what llama-server generates first fills them), then is answered in its usual time.
  const started = performance.now()
  let doneMs: number | null = null
  const during = normalChat().then(async (res) => { doneMs = performance.now() - started; return res })
  await until('the normal request to wait in line', async () => doneMs !== null || (await ps())?.queued_requests === 1)
  await until('a non-reader cut, its slot handed on', async () => doneMs !== null || (await ps())?.queued_requests === 0)
  const grantedMs = performance.now() - started
  const answered = await during
  t.equal(answered.status, 200, 'a client asking while both slots are held is answered')
  t.equal(((await answered.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens, 4)
  withinUsualTime(t, 'its answer once a slot was cut free', doneMs! - Math.min(grantedMs, doneMs!), usual)
  await until('their slots given back', async () => (await ps())?.active_requests === 0)

  // What each got, read now: a stream cut short (no `[DONE]`, no last chunk), and its connection closed.
  for (const [i, socket] of sockets.entries()) {
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    await new Promise<void>((resolve) => { socket.once('close', () => resolve()); socket.resume() })
    const text = Buffer.concat(received).toString('utf8')
    t.match(text, /^HTTP\/1\.1 200 /, `non-reader ${i + 1}: its stream had started`)
    t.notMatch(text, /data: \[DONE\]/, `non-reader ${i + 1}: cut off before the end, its connection closed`)
  }

  const res = await normalChat()
  t.equal(res.status, 200, 'the next client is answered')
  t.equal(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens, 4)
})
