// Connection caps at the door (the slow-body attack: 300 connections without a key trickling a body stayed open
// past 80 s; nothing capped them; slow heads were cut at ~65 s): connections per client address, connections
// without a key when keys are on (the oldest silent ones closed to make room), and a request head's time to arrive.
import { request as httpRequest } from 'node:http'
import { connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import { resolveConfig } from '../../core/platform/config.js'
import { clientAddress } from '../../core/server/connection-caps.js'
import { build } from '../helpers/app.js'
import { until } from '../helpers/until.js'

const KEY = 'sk-connection-caps-test-key-0123456789'

interface Raw {
  socket: Socket
  /** What the server sent so far. */
  text: () => string
  /** Once closed: what the server sent, and how long after the connection was opened. */
  closed: Promise<{ text: string, afterMs: number }>
  /** When it connected (ms since epoch). */
  openedAt: number
  /** How long after it was opened it closed; null while open. */
  closedAfterMs: () => number | null
}

/** A raw connection that sends `data` (a partial request head, say) once connected, then nothing more. */
async function raw (port: number, data = ''): Promise<Raw> {
  const socket = connect(port, '127.0.0.1')
  const started = Date.now()
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
  socket.on('error', () => {})
  let closedAfter: number | null = null
  const closed = new Promise<{ text: string, afterMs: number }>((resolve) => socket.once('close', () => { closedAfter = Date.now() - started; resolve({ text, afterMs: closedAfter }) }))
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
  if (data !== '') socket.write(data)
  return { socket, text: () => text, closed, openedAt: started, closedAfterMs: () => closedAfter }
}

t.test('closing the server waits neither for a connection that never sent a byte nor for a kept one', async (t) => {
  // A header_timeout of 2 minutes: a close that waited for it (or for the kept one's 72 s keep-alive) is told at any speed.
  const app = await build(t, { limits: { header_timeout: '120s' } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const silent = await raw(port)
  const kept = await raw(port, `GET /api/version HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  t.teardown(() => { silent.socket.destroy(); kept.socket.destroy() })
  await until('the kept one answered', () => /\r\n\r\n\{/.test(kept.text()))
  await until('both counted', () => app.connections.open() === 2)
  const started = Date.now()
  await app.close()
  const closedIn = Date.now() - started
  t.ok(closedIn < 30_000, `closed in ${closedIn} ms, not when the client, the keep-alive (72 s) or limits.header_timeout (120 s) would end it`)
  t.equal((await silent.closed).text, '', 'the silent connection closed without an answer')
  await kept.closed
})

/** A GET on a connection of its own (closed after the answer), from `localAddress`: its status, headers and time. */
function timedGet (port: number, path: string, headers: Record<string, string> = {}, localAddress = '127.0.0.1'): Promise<{ status: number, headers: Record<string, unknown>, body: string, ms: number }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, headers, localAddress, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk) => { body += chunk })
        .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, ms: performance.now() - started }))
    }).on('error', reject).end()
  })
}

/** A client's usual time for a request, before an attack: the median of 3. */
async function baselineMs (port: number, localAddress = '127.0.0.1', path = '/api/version', headers: Record<string, string> = {}): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < 3; i++) {
    const res = await timedGet(port, path, headers, localAddress)
    if (res.status !== 200) throw new Error(`the baseline request got ${res.status}: ${res.body}`)
    times.push(res.ms)
  }
  return times.sort((a, b) => a - b)[1]!
}

const isOpen = (r: Raw): boolean => !r.socket.destroyed && !r.socket.readableEnded

t.test('one address past limits.connections_per_client: the new ones get 503 and are closed, the others untouched', async (t) => {
  // A header_timeout of 2 minutes: the held connections are cut (and their room made) only then.
  const app = await build(t, { limits: { connections_per_client: 4, header_timeout: '120s' } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const { connections } = app
  const baseline = await baselineMs(port, '127.0.0.2')
  const held: Raw[] = []
  t.teardown(() => { for (const r of held) r.socket.destroy() })
  for (let i = 0; i < 4; i++) held.push(await raw(port))
  await until('the server counts the 4 held connections', () => connections.open('127.0.0.1') === 4)

  const extra = [await raw(port), await raw(port)]
  for (const { closed } of extra) {
    const { text, afterMs } = await closed
    t.match(text, /^HTTP\/1\.1 503 Service Unavailable\r\n/, `an extra connection is answered 503 (closed after ${afterMs} ms)`)
    t.match(text, /\r\nRetry-After: 1\r\n/, 'with Retry-After')
    t.match(text, /\r\nConnection: close\r\n/, 'and Connection: close')
    t.match(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { error: /too many connections from 127\.0\.0\.1 .*limits\.connections_per_client/ }, 'saying why, in the native error shape')
  }
  const refused = await timedGet(port, '/api/version')
  t.equal(refused.status, 503, 'an HTTP client sending its request at once reads the 503 too, not a reset')
  t.equal(refused.headers['retry-after'], '1')

  const other = await timedGet(port, '/api/version', {}, '127.0.0.2')
  t.equal(other.status, 200, 'another address is served meanwhile')
  // Milliseconds, or held back until the held connections go (the header_timeout, 120 s): a quarter of that divides them.
  t.ok(other.ms < 30_000, `in ${other.ms.toFixed(0)} ms, against ${baseline.toFixed(0)} ms before`)

  t.ok(held.every(isOpen), 'the 4 held connections are still open')
  t.equal(connections.open('127.0.0.1'), 4, 'and the only ones counted')
  held[0]!.socket.write(`GET /api/version HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  await until('an answer on a held connection', () => held[0]!.text().includes('\r\n\r\n'))
  t.match(held[0]!.text(), /^HTTP\/1\.1 200 /, 'one of them is served as before')

  held[1]!.socket.destroy()
  await until('the server counts 3', () => connections.open('127.0.0.1') === 3)
  const after = await timedGet(port, '/api/version')
  t.equal(after.status, 200, 'once one closed, a new connection is served')

  for (const r of held) r.socket.destroy()
  await until('every connection is closed and uncounted', () => connections.open() === 0)
  t.equal(connections.open(), 0, 'nothing is left counted')
})

t.test('IPv4 clients of a dual-stack listener count under their IPv4 address', async (t) => {
  // The rule itself, whatever the machine: an IPv4-mapped address is its IPv4 one; other IPv6 ones stay.
  const address = (remoteAddress: string): string => clientAddress({ remoteAddress } as Socket)
  t.same(['::ffff:10.0.0.5', '::ffff:127.0.0.1', '::1', 'fd00::5', '10.0.0.5'].map(address), ['10.0.0.5', '127.0.0.1', '::1', 'fd00::5', '10.0.0.5'])
  // And on a real dual-stack listener (a machine without IPv6 fails here, saying so: this is a server's usual `::`).
  const app = await build(t, { limits: { connections_per_client: 1 } })
  const port = Number(new URL(await app.listen({ host: '::', port: 0 })).port)
  const first = await raw(port)
  t.teardown(() => first.socket.destroy())
  await until('the server counts it under 127.0.0.1', () => app.connections.open('127.0.0.1') === 1)
  const second = await raw(port)
  t.match((await second.closed).text, /^HTTP\/1\.1 503 /, 'the second from the same address is refused')
  first.socket.destroy()
  await until('nothing counted', () => app.connections.open() === 0)
})

t.test('keys on: past limits.unauthenticated_connections the oldest silent ones go; sending and new ones stay; twice over, new ones are closed', async (t) => {
  // A header_timeout of 2 minutes: the attackers' connections are cut by it only then.
  const app = await build(t, { auth: { api_keys: [KEY] }, limits: { unauthenticated_connections: 4, header_timeout: '120s' } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const { connections } = app
  const auth = { authorization: `Bearer ${KEY}` }
  const baseline = await baselineMs(port, '127.0.0.1', '/api/tags', auth)

  // A key holder's kept-alive connection, authenticated by its first request, is never among those closed.
  const holder = await raw(port, `GET /api/tags HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${KEY}\r\n\r\n`)
  await until('the key holder is answered', () => holder.text().includes('\r\n\r\n'))
  t.match(holder.text(), /^HTTP\/1\.1 200 /)

  // The cap filled by 4 silent connections, and 2 more trickling a head that never ends: a new connection may
  // not be closed yet (a real client's sends its request at once), so both are let in over the cap.
  const attackers: Raw[] = []
  t.teardown(() => { holder.socket.destroy(); for (const r of attackers) r.socket.destroy() })
  const trickle = `POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Ty`
  for (let i = 0; i < 6; i++) {
    attackers.push(await raw(port, i < 4 ? '' : trickle))
    await until(`attacker ${i} counted`, () => connections.unauthenticated === i + 1)
  }
  const [silent, sending] = [attackers.slice(0, 4), attackers.slice(4)]
  t.ok(attackers.every(isOpen), '6 open, over the cap of 4: none is old enough to close yet')

  // Once the silent ones have sent nothing for a second, each new connection closes the oldest of them.
  await until('the silent ones to have waited a second', () => Date.now() - Math.max(...silent.map((r) => r.openedAt)) >= 1_100)
  const served = await timedGet(port, '/api/tags', auth)
  t.equal(served.status, 200, 'a client with the key is served')
  // Milliseconds, or held back until the attackers are cut (the header_timeout, 120 s): a quarter of that divides them.
  t.ok(served.ms < 30_000, `in ${served.ms.toFixed(0)} ms, against ${baseline.toFixed(0)} ms before the attack`)
  const firstClosed = await Promise.race(silent.map((r, i) => r.closed.then((c) => ({ i, ...c }))))
  t.equal(firstClosed.text, '', 'a silent one was closed to make room, with nothing sent (there was no request to answer)')
  await until('the cap kept: silent ones closed until 4 are left without a key', () => connections.unauthenticated <= 4)
  t.ok(sending.every(isOpen), 'the connections sending a head are not closed to make room (their head has its own timeout)')
  t.ok(isOpen(holder), 'the key holder\'s connection is untouched')

  // Twice the cap of new connections without a key: past it, the newest are closed at once.
  const flood: Raw[] = []
  t.teardown(() => { for (const r of flood) r.socket.destroy() })
  const floodStarted = Date.now()
  // All at once, so that the flood and the request fit well within the second on a busy machine too.
  flood.push(...await Promise.all(Array.from({ length: 8 }, () => raw(port))))
  // A key holder connecting into it at once is told to retry (no flood connection has been silent a second yet).
  const duringFlood = await timedGet(port, '/api/tags', auth)
  const floodAgeMs = Date.now() - floodStarted
  t.ok(floodAgeMs < 1_000, `the flood and the request took ${floodAgeMs} ms: within the second a new connection is kept`)
  t.equal(duringFlood.status, 503, 'a key holder connecting into a full flood is told to retry')
  t.equal(duringFlood.headers['retry-after'], '1')
  t.match(duringFlood.body, /too many new connections without an API key \(the server's limit is twice 4, limits\.unauthenticated_connections\); retry in a second/)
  const closedAtOnce = await until('the flood\'s newest to be closed', () => {
    const closed = flood.filter((r) => r.closedAfterMs() !== null)
    return closed.length > 0 ? closed : null
  }, 5_000)
  // A 503 is written only when a connection is refused on arrival; one let in and closed later (silent for a second, to
  // make room) is closed with nothing sent.
  t.ok(closedAtOnce.every((r) => /^HTTP\/1\.1 503 /.test(r.text())), `the newest of the flood past twice the cap were refused at once: answered 503 (closed after ${closedAtOnce.map((r) => r.closedAfterMs()).join(', ')} ms)`)
  t.ok(connections.unauthenticated <= 8, `at most twice the cap wait for a key (${connections.unauthenticated})`)
  t.ok(sending.every(isOpen), 'the ones sending a head are still open')
  const retried = await until('a retry to be served', async () => { const res = await timedGet(port, '/api/tags', auth); return res.status === 200 ? res : null }, 5_000, 250)
  t.equal(retried.status, 200, 'and a retry is served once the flood\'s silent connections may go')

  holder.socket.destroy()
  for (const r of [...attackers, ...flood]) r.socket.destroy()
  await until('every connection is closed and uncounted', () => connections.open() === 0 && connections.unauthenticated === 0)
  t.pass('nothing is left counted')
})

t.test('keys off: limits.unauthenticated_connections does not apply', async (t) => {
  const app = await build(t, { limits: { unauthenticated_connections: 2 } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const held: Raw[] = []
  t.teardown(() => { for (const r of held) r.socket.destroy() })
  for (let i = 0; i < 4; i++) held.push(await raw(port))
  await until('the server counts the 4', () => app.connections.open() === 4)
  const res = await timedGet(port, '/api/version')
  t.equal(res.status, 200, 'a fifth client is served')
  t.ok(held.every(isOpen), 'and all 4 silent connections are still open')
  t.equal(app.connections.unauthenticated, 0, 'none is counted as waiting for a key')
})

t.test('limits.header_timeout: a request head not received whole in time is answered 408 and closed', async (t) => {
  const app = await build(t, { limits: { header_timeout: '1s' } })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const baseline = await baselineMs(port)
  const slow = await raw(port, `POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Ty`)
  const silent = await raw(port)
  t.teardown(() => { slow.socket.destroy(); silent.socket.destroy() })

  const normal = await timedGet(port, '/api/version')
  t.equal(normal.status, 200, 'a normal client is served meanwhile')
  t.ok(normal.ms < 5 * baseline + 1_000, `in ${normal.ms.toFixed(0)} ms, against ${baseline.toFixed(0)} ms before`)

  for (const [what, r] of [['a trickled head', slow], ['a silent connection', silent]] as const) {
    const { text, afterMs } = await r.closed
    // Node's own check (every 30 s by default) cut slow heads at up to twice that: half of 30 s divides them.
    t.ok(afterMs >= 900 && afterMs < 15_000, `${what}: closed after ${afterMs} ms`)
    t.match(text, /^HTTP\/1\.1 408 /, `${what}: answered 408`)
  }
  await until('nothing counted', () => app.connections.open() === 0)
})

t.test('metrics.listen: slow heads cut and connections per client capped there too', async (t) => {
  const metricsPort = await new Promise<number>((resolve) => {
    const probe = createServer().listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
  const app = await build(t, { metrics: { listen: `127.0.0.1:${metricsPort}` }, limits: { header_timeout: '1s', connections_per_client: 2 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const slow = await raw(metricsPort, `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${metricsPort}\r\n`)
  const held = await raw(metricsPort)
  t.teardown(() => { slow.socket.destroy(); held.socket.destroy() })
  const extra = await raw(metricsPort)
  t.match((await extra.closed).text, /^HTTP\/1\.1 503 /, 'a third connection from one address is answered 503')
  const { text, afterMs } = await slow.closed
  t.match(text, /^HTTP\/1\.1 408 /, `a slow head is answered 408 and closed (after ${afterMs} ms)`)
  t.ok(afterMs < 15_000, `within half of Node's own 30 s check (${afterMs} ms)`)
  const scrape = await timedGet(metricsPort, '/metrics', { host: `127.0.0.1:${metricsPort}` })
  t.equal(scrape.status, 200, 'a scrape is served once there is room')
})

t.test('the limits\' defaults, and wrong values refused', async (t) => {
  const { limits } = resolveConfig([])
  t.equal(limits.headerTimeoutMs, 15_000)
  t.equal(limits.connectionsPerClient, 256)
  t.equal(limits.unauthenticatedConnections, 128)
  const wrong: Array<[Record<string, unknown>, RegExp]> = [
    [{ header_timeout: 0 }, /limits\.header_timeout must be longer than 0/],
    [{ header_timeout: 'soon' }, /limits\.header_timeout = "soon" is not allowed: must be a duration/],
    [{ connections_per_client: 0 }, /limits\.connections_per_client = 0 is not allowed: must be >= 1/],
    [{ connections_per_client: 'many' }, /limits\.connections_per_client = "many" is not allowed: must be integer/],
    [{ unauthenticated_connections: 0 }, /limits\.unauthenticated_connections = 0 is not allowed: must be >= 1/],
    [{ unauthenticated_connections: 1.5 }, /limits\.unauthenticated_connections = 1\.5 is not allowed: must be integer/],
  ]
  for (const [limitsGiven, message] of wrong) {
    t.throws(() => resolveConfig([{ source: 'test', values: { limits: limitsGiven } }]), message, JSON.stringify(limitsGiven))
  }
})
