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
