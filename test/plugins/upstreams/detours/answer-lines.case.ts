import { Readable } from 'node:stream'
import t from 'tap'
import { answerLines } from '../../../../plugins/upstreams/detours/answer-lines.js'

// An upstream's streamed answer read line by line, SSE or NDJSON alike, over the splitter sseData shares
// (test/runtimes/endpoint/delimited-text.case.ts).

// Bytes as the network cuts them.
const body = (text: string, cuts: number[]): Readable => {
  const bytes = Buffer.from(text)
  const at = [0, ...cuts, bytes.length]
  return Readable.from(at.slice(1).map((end, i) => bytes.subarray(at[i], end)))
}
const all = async <T>(items: AsyncGenerator<T>): Promise<T[]> => { const out: T[] = []; for await (const item of items) out.push(item); return out }

t.test('answerLines reads what it read before it shared the splitter', async (t) => {
  t.same(await all(answerLines(body('data: {"a":1}\n\n: ping\n{"b":2}\ndata: [DONE]\n\n{"c":3}\n', [9]))), [{ a: 1 }, { b: 2 }], 'SSE and NDJSON lines, up to [DONE]')
  t.same(await all(answerLines(body('{"a":1}\n{"b":2}', [3]))), [{ a: 1 }, { b: 2 }], 'a last line without its newline')
})
