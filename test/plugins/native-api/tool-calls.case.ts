import t from 'tap'
import { collectToolCalls, ollamaToolCalls, type ToolCall } from '../../../plugins/native-api/tool-calls.js'

// llama-server streams a tool call in OpenAI's deltas (name first, arguments in pieces, several calls by
// index); Ollama's clients expect each call whole, arguments as an object. A random-weight model writes no
// calls, so the mapping is checked here on the deltas llama-server sends.

t.test('streamed deltas of two calls assemble into whole calls in Ollama\'s shape, arguments parsed, key order kept', async (t) => {
  const calls: ToolCall[] = []
  collectToolCalls(calls, [{ index: 0, id: 'call_a', function: { name: 'get_weather', arguments: '' } }])
  collectToolCalls(calls, [{ index: 0, function: { arguments: '{"city":"Par' } }])
  collectToolCalls(calls, [{ index: 1, id: 'call_b', function: { name: 'get_time', arguments: '{"zone":' } }, { index: 0, function: { arguments: 'is","days":2}' } }])
  collectToolCalls(calls, [{ index: 1, function: { arguments: '"CET"}' } }])
  collectToolCalls(calls, undefined)
  const shaped = ollamaToolCalls(calls)
  t.same(shaped, [
    { id: 'call_a', function: { index: 0, name: 'get_weather', arguments: { city: 'Paris', days: 2 } } },
    { id: 'call_b', function: { index: 1, name: 'get_time', arguments: { zone: 'CET' } } },
  ])
  t.same(Object.keys((shaped[0] as { function: { arguments: object } }).function.arguments), ['city', 'days'], 'the model\'s key order')
})

t.test('a whole answer\'s calls (no index), no arguments, and arguments that are not JSON', async (t) => {
  const calls: ToolCall[] = []
  collectToolCalls(calls, [{ id: 'x', function: { name: 'now', arguments: '' } }, { function: { name: 'broken', arguments: '{"a":' } }])
  t.same(ollamaToolCalls(calls), [
    { id: 'x', function: { index: 0, name: 'now', arguments: {} } },
    { function: { index: 1, name: 'broken', arguments: '{"a":' } },
  ], 'a call without arguments has an empty object; text that is not JSON is kept as the model wrote it')
})

t.test('a call numbered past the 128 an answer may make is an error of the answer: no array is made of it', async (t) => {
  for (const index of [128, 1e7, 1e8, -1, 1.5, '3']) {
    const calls: ToolCall[] = []
    t.throws(() => collectToolCalls(calls, [{ index: index as number, function: { name: 'f', arguments: '{}' } }]), { statusCode: 502, code: 'invalid_runtime_answer', message: /tool call numbered .*: an answer's calls are numbered 0 to 127/ }, String(index))
    t.equal(calls.length, 0)
  }
  const calls: ToolCall[] = []
  t.throws(() => collectToolCalls(calls, Array.from({ length: 129 }, () => ({ function: { name: 'f' } }))), /numbered 128/, 'nor 129 calls without numbers')
  const skipped: ToolCall[] = []
  collectToolCalls(skipped, [{ index: 127, function: { name: 'last' } }])
  t.same(ollamaToolCalls(skipped), [{ function: { index: 0, name: 'last', arguments: {} } }], 'numbers skipped leave no empty calls')
})
