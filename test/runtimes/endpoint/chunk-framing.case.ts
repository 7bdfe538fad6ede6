import t from 'tap'
import { ChunkFraming } from '../../../runtimes/endpoint/chunk-framing.js'

const chunk = (data: string): string => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`
const events = ['data: {"a":1}\n\n', 'data: {"b":"ü"}\n\n', 'data: [DONE]\n\n']
const wire = events.map(chunk).join('') + '0\r\n\r\n'

t.test('whole chunks pass through as they are; the zero-size chunk ends the body and is kept back', async (t) => {
  const framing = new ChunkFraming(14)
  const out = framing.push(Buffer.from(wire))
  t.equal(out.toString(), events.map(chunk).join(''))
  t.ok(framing.finished)
  t.equal(framing.tail.toString(), 'data: [DONE]\n\n')
  t.equal(ChunkFraming.payload(out).toString(), events.join(''), 'payload() removes the framing')
})

t.test('bytes cut anywhere (one at a time) are forwarded only as whole chunks, in order', async (t) => {
  const framing = new ChunkFraming(14)
  const forwarded: Buffer[] = []
  for (const byte of Buffer.from(wire)) {
    const out = framing.push(Buffer.from([byte]))
    if (out.length > 0) forwarded.push(out)
  }
  t.same(forwarded.map(String), events.map(chunk), 'each chunk forwarded once, whole, when its last byte came')
  t.ok(framing.finished)
})

t.test('a cut in the middle of a chunk holds that chunk back until its end arrives', async (t) => {
  const framing = new ChunkFraming(14)
  const first = chunk(events[0]!)
  const second = chunk(events[1]!)
  const out1 = framing.push(Buffer.from(first + second.slice(0, 7)))
  t.equal(out1.toString(), first, 'the whole chunk goes, the partial one waits')
  t.ok(framing.midChunk)
  t.equal(framing.tail.toString(), 'data: {"a":1}\n\n'.slice(-14))
  const out2 = framing.push(Buffer.from(second.slice(7)))
  t.equal(out2.toString(), second)
  t.notOk(framing.midChunk)
  t.notOk(framing.finished)
})

t.test('chunk extensions are ignored; upper-case hex sizes are read', async (t) => {
  const data = 'x'.repeat(26)
  const framing = new ChunkFraming(4)
  const out = framing.push(Buffer.from(`1A;name=value\r\n${data}\r\n0\r\n\r\n`))
  t.equal(ChunkFraming.payload(out).toString(), data)
  t.equal(framing.tail.toString(), 'xxxx')
  t.ok(framing.finished)
})

t.test('bytes that are not chunked coding are refused, not forwarded', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['zz\r\nabc\r\n', /bad chunk size/],
    ['\r\nabc\r\n', /empty chunk size/],
    ['3\r\nabcXY', /no CRLF after a chunk/],
    ['123456789\r\n', /chunk size too large/],
  ]
  for (const [bytes, error] of cases) {
    t.throws(() => new ChunkFraming(4).push(Buffer.from(bytes)), error, JSON.stringify(bytes))
  }
})

t.test('chunk(): data framed again as one chunk reads back whole; no data makes no chunk (it would end the body)', async (t) => {
  const data = Buffer.from(events.join(''))
  const framed = ChunkFraming.chunk(data)
  t.equal(framed.toString(), chunk(events.join('')), 'size in hex, CRLF, the data, CRLF')
  t.same(ChunkFraming.payload(framed), data)
  const read = new ChunkFraming(8)
  t.same(read.push(Buffer.concat([framed, Buffer.from('0\r\n\r\n')])), framed, 'a reader takes it as one whole chunk')
  t.ok(read.finished)
  t.equal(ChunkFraming.chunk(Buffer.alloc(0)).length, 0)
})

t.test('a chunk over many reads is joined once, when whole; one over the limit is refused as soon as its size is read', async (t) => {
  const data = 'x'.repeat(12 << 20)
  const bytes = Buffer.from(chunk(data))
  const framing = new ChunkFraming(14)
  const started = process.cpuUsage()
  let out: Buffer = Buffer.alloc(0)
  for (let at = 0; at < bytes.length; at += 64 << 10) {
    const piece = framing.push(bytes.subarray(at, at + (64 << 10)))
    if (piece.length > 0) out = piece
  }
  const cpu = process.cpuUsage(started)
  t.equal(out.length, bytes.length, 'the chunk whole')
  // Joining every read with what was held copied ~1.2 GB for these 12 MiB.
  t.ok((cpu.user + cpu.system) / 1000 < 500, `12 MiB in 64 KiB reads: ${Math.round((cpu.user + cpu.system) / 1000)} ms of CPU`)
  const small = new ChunkFraming(14, 1 << 20)
  t.throws(() => small.push(Buffer.from(`${(2 << 20).toString(16)}\r\nxx`)), /a chunk over 1048576 bytes/, 'its size line says it is too large')
  const unsaid = new ChunkFraming(14, 1 << 20)
  t.throws(() => { for (let i = 0; i < 100; i++) unsaid.push(Buffer.alloc(64 << 10, 0x61)) }, /no chunk size line/, 'bytes that never say a size')
})
