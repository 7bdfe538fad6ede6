import { Readable } from 'node:stream'
import t from 'tap'
import { delimitedText } from '../../../runtimes/endpoint/delimited-text.js'
import { sseData } from '../../../runtimes/endpoint/sse-events.js'
import { answerLines } from '../../../runtimes/upstream/answer-lines.js'

// Bytes as the network cuts them: a 2-byte character and the 2-byte delimiter each split across chunks.
const body = (text: string, cuts: number[]): Readable => {
  const bytes = Buffer.from(text)
  const at = [0, ...cuts, bytes.length]
  return Readable.from(at.slice(1).map((end, i) => bytes.subarray(at[i], end)))
}
const all = async <T>(items: AsyncGenerator<T>): Promise<T[]> => { const out: T[] = []; for await (const item of items) out.push(item); return out }

t.test('delimitedText: pieces whole across chunk cuts, the rest after the last delimiter too', async (t) => {
  const text = 'data: {"a":"ü"}\n\ndata: {"b":2}\n\ntail'
  const ü = Buffer.from(text).indexOf(0xc3)
  const gap = Buffer.from(text).indexOf('\n\n')
  t.same(await all(delimitedText(body(text, [ü + 1, gap + 1]), Buffer.from('\n\n'))), ['data: {"a":"ü"}', 'data: {"b":2}', 'tail'])
  t.same(await all(delimitedText(body('a\n', [1]), Buffer.from('\n'))), ['a'], 'nothing after the last delimiter: no empty piece')
})

t.test('sseData and answerLines read what they read before they shared the splitter', async (t) => {
  const sse = ': ping\n\ndata: {"a":1}\n\nevent: x\ndata: {"b":\ndata: 2}\n\ndata: [DONE]\n'
  t.same(await all(sseData(body(sse, [5, 20]))), ['{"a":1}', '{"b":\n2}', '[DONE]'])
  t.same(await all(answerLines(body('data: {"a":1}\n\n: ping\n{"b":2}\ndata: [DONE]\n\n{"c":3}\n', [9]))), [{ a: 1 }, { b: 2 }], 'SSE and NDJSON lines, up to [DONE]')
  t.same(await all(answerLines(body('{"a":1}\n{"b":2}', [3]))), [{ a: 1 }, { b: 2 }], 'a last line without its newline')
})
