import t from 'tap'
import { answerUsage } from '../../../runtimes/endpoint/answer-usage.js'

const TIMINGS = '"timings":{"cache_n":3,"prompt_n":9,"prompt_ms":1.5,"predicted_n":4,"predicted_ms":2.5}'

t.test('timings, as chat and text completions end: the prompt counts its cached tokens', async (t) => {
  t.same(answerUsage(`{"choices":[],"usage":{"completion_tokens":4,"prompt_tokens":12},${TIMINGS}}`), { prompt: 12, generated: 4 })
  // The end of a stream: the last event, then [DONE].
  t.same(answerUsage(`ta":1}}\n\ndata: {"choices":[{"delta":{}}],${TIMINGS}}\n\ndata: [DONE]\n\n`), { prompt: 12, generated: 4 })
})

t.test('usage in the three shapes', async (t) => {
  t.same(answerUsage('{"usage":{"completion_tokens":5,"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}'), { prompt: 7, generated: 5 }, 'OpenAI: prompt_tokens counts cached ones')
  t.same(answerUsage('{"status":"completed","usage":{"input_tokens":7,"output_tokens":5,"input_tokens_details":{"cached_tokens":2}}}'), { prompt: 7, generated: 5 }, 'Responses: input_tokens counts cached ones')
  t.same(answerUsage('{"type":"message","usage":{"cache_read_input_tokens":2,"input_tokens":5,"output_tokens":6}}'), { prompt: 7, generated: 6 }, 'Anthropic: input_tokens does not')
  t.same(answerUsage('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":6}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'), { prompt: null, generated: 6 }, 'a Messages stream ends with its output tokens only')
})

t.test('generated text cannot pass for the counts; nothing to read is null', async (t) => {
  t.same(answerUsage(`{"content":"say \\"timings\\":{\\"prompt_n\\":999}","usage":{"completion_tokens":1,"prompt_tokens":2}}`), { prompt: 2, generated: 1 }, 'a key in text is escaped')
  t.equal(answerUsage('{"input_tokens":12}'), null, 'count_tokens says no usage')
  t.equal(answerUsage('nothing here'), null)
  t.equal(answerUsage('{"usage":{"prompt_tokens":3'), null, 'cut off')
  t.equal(answerUsage('{"usage":{"prompt_tokens":3,}}'), null, 'not JSON')
  t.equal(answerUsage('{"usage":null}'), null, 'not an object')
  // A count that cannot be is an error of the answer, never booked (a negative one took a key's day below zero).
  for (const usage of ['{"prompt_tokens":-1}', '{"completion_tokens":"2"}', '{"prompt_tokens":1.5}', '{"prompt_tokens":1e12}', '{"output_tokens":-2000000}']) {
    t.throws(() => answerUsage(`{"usage":${usage}}`), /impossible token count, usage\.\w+ = .*: a count is a whole number from 0 to 1000000000/, usage)
  }
  t.throws(() => answerUsage('{"timings":{"prompt_n":3,"predicted_n":-5}}'), { code: 'invalid_runtime_answer', statusCode: 502 }, 'timings too')
})
