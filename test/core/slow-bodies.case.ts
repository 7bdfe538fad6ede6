// Slow bodies, an attack on the connections: 300 connections without a key trickling a body stayed open past 80 s, the
// server reading on after its 401. A refusal now closes the connection; any body not received whole within
// limits.body_timeout is cut off; model uploads are exempt.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { build } from '../helpers/app.js'
import { usualMs, withinUsualTime } from '../helpers/usual-time.js'

const KEY = 'sk-slow-bodies-test-key-0123456789'

/** A POST whose head says `length` bytes, of which only the first few are sent: what comes back, and when the connection closed. */
function trickle (port: number, path: string, length: number, headers: Record<string, string> = {}): { socket: Socket, answer: Promise<{ text: string, closedAfterMs: number }> } {
  const socket = connect(port, '127.0.0.1')
  const started = Date.now()
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
  socket.on('error', () => {})
  const head = Object.entries({ Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json', 'Content-Length': String(length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{"model":`)
  return { socket, answer: new Promise((resolve) => socket.once('close', () => resolve({ text, closedAfterMs: Date.now() - started }))) }
}

t.test('without a key: 401 and the connection closed at once, 100 of them, while a client with a key is served', async (t) => {
  const app = await build(t, { auth: { api_keys: [KEY] } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const tags = (): Promise<Response> => fetch(`http://127.0.0.1:${port}/api/tags`, { headers: { authorization: `Bearer ${KEY}` } })
  const usual = await usualMs(async () => (await tags()).text())
  const slow = Array.from({ length: 100 }, () => trickle(port, '/api/chat', 1_000_000))
  t.teardown(() => { for (const s of slow) s.socket.destroy() })
  const started = performance.now()
  const served = await tags()
  withinUsualTime(t, 'a client with a key', performance.now() - started, usual)
  t.equal(served.status, 200, 'a client with a key is answered meanwhile')
  const answers = await Promise.all(slow.map((s) => s.answer))
  t.ok(answers.every((a) => /^HTTP\/1\.1 401 /.test(a.text)), 'each got its 401')
  t.ok(answers.every((a) => /\r\nconnection: close\r\n/i.test(a.text)), 'saying the connection closes')
  t.ok(answers.every((a) => a.closedAfterMs < 10_000), `and each connection closed (the slowest after ${Math.max(...answers.map((a) => a.closedAfterMs))} ms), not read on`)
})

t.test('with a key: a body not received whole within limits.body_timeout is cut off; a model upload is not', async (t) => {
  const app = await build(t, { limits: { body_timeout: '1s' } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const chat = trickle(port, '/api/chat', 1_000_000)
  const upload = trickle(port, `/api/blobs/sha256:${'b'.repeat(64)}`, 1_000_000, { 'Content-Type': 'application/octet-stream' })
  t.teardown(() => { chat.socket.destroy(); upload.socket.destroy() })
  const cut = await chat.answer
  t.ok(cut.closedAfterMs >= 900 && cut.closedAfterMs < 10_000, `the chat's connection closed after ${cut.closedAfterMs} ms`)
  t.equal(cut.text, '', 'with nothing sent back: there was no whole request to answer')
  t.notOk(upload.socket.destroyed, 'the upload, exempt, is still open past the limit')
  const normal = await fetch(`http://127.0.0.1:${port}/api/version`)
  t.equal(normal.status, 200, 'others are served')
})

t.test('limits.body_timeout: 30 s by default, never 0', async (t) => {
  const { resolveConfig } = await import('../../core/platform/config.js')
  t.equal(resolveConfig([]).limits.bodyTimeoutMs, 30_000)
  t.throws(() => resolveConfig([{ source: 'test', values: { limits: { body_timeout: 0 } } }]), /limits\.body_timeout must be longer than 0/)
})
