import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { eventRewrite } from '../../../runtimes/endpoint/event-rewrite.js'
import { relayStream, type RelaySink } from '../../../runtimes/endpoint/stream-relay.js'

// What a relay's rewrite or its sink holds of an event not yet ended is bounded as a line is (limits.lineBytes, an
// upstream's upstream_line_size): a server that streams one event without end, in reads each under that bound, ends
// the relay with the limits' error, in time linear in what came.

const LINE = 8 << 20
let server: Server
let baseUrl = ''

t.before(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: {"choices":[{"index":0,"delta":{"content":"')
    const piece = Buffer.alloc(64 << 10, 0x61)
    let sent = 0
    const more = (): void => {
      // 48 MB in 64 KiB chunks unless the gateway lets go first.
      while (sent < 48e6 && !res.destroyed) {
        sent += piece.length
        if (!res.write(piece)) { res.once('drain', more); return }
      }
      if (!res.destroyed) res.end('"}}]}\n\n')
    }
    more()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
t.teardown(() => { server.closeAllConnections(); server.close() })

const limits = { answerBytes: 64 << 20, errorBytes: 64 << 10, lineBytes: LINE, tooLarge: (limit: string) => new Error(`over the ${limit} limit`) }

function relay (sink: RelaySink, withRewrite: boolean): Promise<void> {
  return relayStream({
    name: 'm', address: { baseUrl, socketPath: null }, path: '/v1/chat/completions', payload: '{}', sink,
    progress: { tailBytes: 64, tail: Buffer.alloc(0) }, signal: new AbortController().signal, limits,
    ...(withRewrite ? { rewrite: eventRewrite(() => null) } : {}),
  })
}

t.test('an event held by the relay\'s rewrite ends the relay at the line limit', async (t) => {
  let written = 0
  const sink: RelaySink = { open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { written += chunk.length; return true }, drained: async () => {} }
  const cpu = process.cpuUsage()
  await t.rejects(relay(sink, true), /over the lineBytes limit/)
  const ms = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1000
  t.ok(ms < 3000, `in ${Math.round(ms)} ms of CPU`)
  t.equal(written, 0, 'nothing of the unended event went on')
})

t.test('an event held by the sink (one that reads events) ends the relay at the line limit', async (t) => {
  const sink: RelaySink & { heldBytes: number } = { heldBytes: 0, open: () => {}, chunkedSocket: () => null, writeRaw (chunk) { this.heldBytes += chunk.length; return true }, drained: async () => {} }
  await t.rejects(relay(sink, false), /over the lineBytes limit/)
  t.ok(sink.heldBytes > LINE && sink.heldBytes < LINE + (1 << 20), `it stopped just past the limit (${sink.heldBytes} bytes held)`)
})
