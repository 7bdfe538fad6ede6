import t from 'tap'
import { UpstreamModelClient } from '../../../plugins/upstreams/upstream-model-client.js'
import type { RelaySink } from '../../../runtimes/endpoint/stream-relay.js'
import { fakeUpstream, upstream } from './fake-upstream.js'

// The client of an upstream's model: what it adds to the transport it shares with llama-server's client (the key,
// the names, the limits and redaction: upstream-endpoint.case.ts, hostile-upstream.case.ts), and the streams'
// connections it keeps, which llama-server closes after every stream.

const never = new AbortController().signal

/** A sink that collects what a relay writes (no chunked client socket: the data comes unframed). */
function collectingSink (): { sink: RelaySink, text: () => string } {
  const chunks: Buffer[] = []
  return {
    sink: { open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { chunks.push(Buffer.from(chunk)); return true }, drained: async () => {} },
    text: () => Buffer.concat(chunks).toString('utf8'),
  }
}

t.test('streams kept: one connection, nothing of a stream left on it, a stale one replaced', async (t) => {
  let n = 0
  const fake = await fakeUpstream(t, (_req, res) => {
    // The twelfth arrives on the kept connection: dropped unanswered, as an upstream whose idle timer fired then.
    if (++n === 12) { res.socket?.destroy(); return }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(`data: {"n":${n}}\n\n`)
    res.end('data: [DONE]\n\n')
  })
  const client = new UpstreamModelClient(upstream({ url: fake.origin, kind: 'openai', maxConcurrent: 2 }), 'acme/tiny')
  t.teardown(() => client.close())
  const relay = async (): Promise<string> => {
    const { sink, text } = collectingSink()
    await client.relay('/v1/chat/completions', '{}', sink, { tailBytes: 64, tail: Buffer.alloc(0) }, never)
    return text()
  }
  // Node warns when an emitter has more than 10 listeners of one event: a stream's left on the kept connection would pile up.
  const warnings: Error[] = []
  const onWarning = (w: Error): void => { warnings.push(w) }
  process.on('warning', onWarning)
  t.teardown(() => { process.removeListener('warning', onWarning) })
  for (let i = 1; i <= 11; i++) t.equal(await relay(), `data: {"n":${i}}\n\ndata: [DONE]\n\n`, `stream ${i} whole`)
  t.equal(fake.connections(), 1, 'eleven streams, one connection')
  t.equal(await relay(), 'data: {"n":13}\n\ndata: [DONE]\n\n', 'the stream whose kept connection was dropped is sent again, on a new one')
  t.equal(fake.connections(), 2)
  t.equal(n, 13)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings.map((w) => w.name), [], 'no listener piled up on the kept connection')
})
