import t from 'tap'
import { answerLines } from '../../../../plugins/upstreams/detours/answer-lines.js'
import { all, cutBody as body } from '../../../helpers/cut-body.js'

// An upstream's streamed answer read line by line, SSE or NDJSON alike, over the splitter sseData shares
// (test/runtimes/endpoint/delimited-text.case.ts).

t.test('answerLines reads what it read before it shared the splitter', async (t) => {
  t.same(await all(answerLines(body('data: {"a":1}\n\n: ping\n{"b":2}\ndata: [DONE]\n\n{"c":3}\n', [9]))), [{ a: 1 }, { b: 2 }], 'SSE and NDJSON lines, up to [DONE]')
  t.same(await all(answerLines(body('{"a":1}\n{"b":2}', [3]))), [{ a: 1 }, { b: 2 }], 'a last line without its newline')
})
