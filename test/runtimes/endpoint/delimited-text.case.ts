import { Readable } from 'node:stream'
import t from 'tap'
import { delimitedText } from '../../../runtimes/endpoint/delimited-text.js'
import { sseData } from '../../../runtimes/endpoint/sse-events.js'
import { all, cutBody as body } from '../../helpers/cut-body.js'

// Bytes as the network cuts them (body): a 2-byte character and the 2-byte delimiter each split across chunks.

t.test('delimitedText: pieces whole across chunk cuts, the rest after the last delimiter too', async (t) => {
  const text = 'data: {"a":"ü"}\n\ndata: {"b":2}\n\ntail'
  const ü = Buffer.from(text).indexOf(0xc3)
  const gap = Buffer.from(text).indexOf('\n\n')
  t.same(await all(delimitedText(body(text, [ü + 1, gap + 1]), Buffer.from('\n\n'))), ['data: {"a":"ü"}', 'data: {"b":2}', 'tail'])
  t.same(await all(delimitedText(body('a\n', [1]), Buffer.from('\n'))), ['a'], 'nothing after the last delimiter: no empty piece')
})

t.test('sseData reads what it read before it shared the splitter (answerLines, its other reader: test/plugins/upstreams/detours)', async (t) => {
  const sse = ': ping\n\ndata: {"a":1}\n\nevent: x\ndata: {"b":\ndata: 2}\n\ndata: [DONE]\n'
  t.same(await all(sseData(body(sse, [5, 20]))), ['{"a":1}', '{"b":\n2}', '[DONE]'])
})

t.test('delimitedText: every cut, one byte per chunk, gives the same pieces', async (t) => {
  const text = 'data: {"a":"ü"}\n\n\n\ndata: {"b":2}\n\ntail'
  const cuts = Array.from({ length: Buffer.byteLength(text) - 1 }, (_, i) => i + 1)
  t.same(await all(delimitedText(body(text, cuts), Buffer.from('\n\n'))), ['data: {"a":"ü"}', '', 'data: {"b":2}', 'tail'])
})

t.test('delimitedText: a long piece over many reads costs time in proportion to its bytes', async (t) => {
  // 48 MB without a delimiter, in 64 KiB reads, then its end: copying all held bytes on every read took 8.6 s of CPU.
  const read = Buffer.alloc(64 << 10, 0x61)
  const reads = 768
  const started = process.cpuUsage()
  const pieces = await all(delimitedText(Readable.from((function * () { for (let i = 0; i < reads; i++) yield read; yield Buffer.from('\nend') })()), Buffer.from('\n')))
  const cpuMs = (process.cpuUsage(started).user + process.cpuUsage(started).system) / 1000
  t.same(pieces.map((p) => p.length), [reads * read.length, 3])
  t.ok(cpuMs < 1500, `48 MiB in one piece: ${Math.round(cpuMs)} ms of CPU`)
})

t.test('delimitedText: a piece or a body past its limit is an error, read no further', async (t) => {
  const limits = { lineBytes: 10, answerBytes: 40, tooLarge: (limit: string) => new Error(`past ${limit}`) }
  t.same(await all(delimitedText(body('0123456789\nabc\n', [4, 12]), Buffer.from('\n'), limits)), ['0123456789', 'abc'], 'a piece of exactly the limit')
  await t.rejects(all(delimitedText(body('0123456789A\n', [4]), Buffer.from('\n'), limits)), /past lineBytes/, 'one byte more, its delimiter in the same read')
  await t.rejects(all(delimitedText(body('0123456789ABCDEF', [4, 8, 12]), Buffer.from('\n'), limits)), /past lineBytes/, 'a piece with no delimiter yet')
  let read = 0
  const endless = Readable.from((function * () { for (;;) { read++; yield Buffer.from('ok\n') } })())
  await t.rejects(all(delimitedText(endless, Buffer.from('\n'), limits)), /past answerBytes/, 'an endless body of short lines')
  t.ok(read <= 14, `stopped after ${read} reads`)
  t.ok(endless.destroyed, 'the body destroyed')
})
