import t from 'tap'
import { chainedRewrites, type DataRewrite } from '../../../runtimes/endpoint/data-rewrite.js'
import { eventBytes, eventData, eventRewrite } from '../../../runtimes/endpoint/event-rewrite.js'

const events = ['data: {"a":1}\n\n', 'event: named\ndata: {"b":2}\n\n', 'data: [DONE]\n\n']
// Doubles the value of `b`, leaves the rest.
const doubled = (): DataRewrite => eventRewrite((event) => {
  const parsed = eventData(event)
  return typeof parsed?.data.b === 'number' ? eventBytes({ b: parsed.data.b * 2 }, parsed.name) : null
})

t.test('pieces whose events all stay go on untouched (null); an edited event is replaced in its piece', async (t) => {
  const rewrite = doubled()
  t.equal(rewrite.push(Buffer.from(events[0]!)), null, 'nothing to change: the piece as it came')
  t.equal(rewrite.push(Buffer.from(events[1]! + events[2]!))?.toString(), 'event: named\ndata: {"b":4}\n\n' + events[2], 'the named event edited, its name kept')
  t.equal(rewrite.end().length, 0)
})

t.test('an event cut across pieces (one byte at a time) is held until its end and edited whole', async (t) => {
  const rewrite = doubled()
  let out = ''
  for (const byte of Buffer.from(events.join(''))) out += (rewrite.push(Buffer.from([byte])) ?? Buffer.from([byte])).toString()
  t.equal(out + rewrite.end().toString(), events[0] + 'event: named\ndata: {"b":4}\n\n' + events[2])
})

t.test('what is held when the body ends goes last; eventData reads only JSON data', async (t) => {
  const rewrite = doubled()
  t.equal(rewrite.push(Buffer.from('data: {"a"'))?.length, 0, 'held')
  t.equal(rewrite.end().toString(), 'data: {"a"')
  t.equal(eventData(Buffer.from('data: [DONE]\n\n')), null)
  t.equal(eventData(Buffer.from(': a comment\n\n')), null)
  t.same(eventData(Buffer.from('event: x\ndata: {"y":1}\n\n')), { name: 'x', data: { y: 1 } })
  // The one reader of the surfaces and the call hooks: data in several lines joined as the SSE spec says, an event read
  // where it lies among others.
  t.same(eventData(Buffer.from('id: 7\nevent:x\ndata: {"y":\ndata:1}\n\n')), { name: 'x', data: { y: 1 } })
  const two = Buffer.from('data: {"a":1}\n\nevent: b\ndata: {"b":2}\n\n')
  t.same(eventData(two, 15, two.length), { name: 'b', data: { b: 2 } })
  t.same(eventData(two, 0, 15), { name: null, data: { a: 1 } })
})

t.test('chained rewrites: the second reads what the first made', async (t) => {
  const upper: DataRewrite = { push: (data) => Buffer.from(data.toString().replace('"b"', '"b"')), end: () => Buffer.alloc(0) }
  const chain = chainedRewrites(upper, doubled())!
  t.equal(chain.push(Buffer.from(events[1]!))?.toString(), 'event: named\ndata: {"b":4}\n\n')
  t.equal(chainedRewrites(null, undefined), null)
})

t.test('what an unended event holds is counted (the relay bounds it), and kept as pieces, not copied at each', async (t) => {
  const rewrite = doubled()
  const piece = Buffer.alloc(64 << 10, 0x61)
  t.equal(rewrite.push(Buffer.from('data: {"b":"'))?.length, 0, 'held')
  const cpu = process.cpuUsage()
  // 64 MiB in 64 KiB pieces: joined at every piece, that is 32 GiB copied.
  for (let i = 0; i < 1024; i++) rewrite.push(piece)
  const ms = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1000
  t.equal(rewrite.heldBytes, 12 + 1024 * piece.length, 'every byte of it counted')
  t.ok(ms < 2000, `held in ${Math.round(ms)} ms of CPU`)
  const chained = chainedRewrites(doubled(), doubled())!
  chained.push(Buffer.from('data: {"b":1}\n\ndata: {"b"'))
  t.equal(chained.heldBytes, 10, 'a chain counts what its rewrites hold')
  t.equal(rewrite.push(Buffer.from('"}\n\n'))?.length, 12 + 1024 * piece.length + 4, 'its end brings it out whole')
  t.equal(rewrite.heldBytes, 0)
})

