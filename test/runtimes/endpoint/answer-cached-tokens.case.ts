import t from 'tap'
import { answerCachedTokens } from '../../../runtimes/endpoint/answer-usage.js'

t.test('the cached part of an answer\'s prompt, from wherever it says it', async (t) => {
  t.equal(answerCachedTokens('{"usage":{"prompt_tokens":12},"timings":{"cache_n":3,"prompt_n":9,"predicted_n":4}}'), 3, 'llama-server\'s timings win')
  t.equal(answerCachedTokens('data: {"choices":[],"timings":{"cache_n":5,"prompt_n":1}}\n\ndata: [DONE]\n\n'), 5, 'the end of a stream')
  t.equal(answerCachedTokens('{"usage":{"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}'), 2, 'OpenAI\'s usage')
  t.equal(answerCachedTokens('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":4}}}'), 4, 'Anthropic\'s first event')
  t.equal(answerCachedTokens('{"usage":{"prompt_tokens":7}}'), 0, 'not said: none')
  t.throws(() => answerCachedTokens('{"timings":{"cache_n":-1}}'), /impossible token count, timings\.cache_n = -1/, 'not a count: an error of the answer')
  t.equal(answerCachedTokens('nothing here'), 0)
})
