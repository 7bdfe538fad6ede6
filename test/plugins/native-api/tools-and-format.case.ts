import { Ajv } from 'ajv'
import { Ollama } from 'ollama'
import t from 'tap'
import { serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const qwen = sharedServer(() => serveRealisticModels(t, { 'acme/qwen': 'qwen25' }))

// `format` and `tools` on the native surface through the official ollama client, on a tiny random-weight
// model with Qwen2's real vocabulary and Qwen2.5-Instruct's real template.

const PERSON = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
  required: ['name', 'age'],
  additionalProperties: false,
}

t.test('format as a JSON schema, on chat and generate, streamed and not: the text parses and validates', async (t) => {
  const { url } = await qwen()
  const ollama = new Ollama({ host: url })
  const validate = new Ajv().compile(PERSON)
  const chat = await ollama.chat({ model: 'acme/qwen', messages: [{ role: 'user', content: 'a person' }], format: PERSON, options: { num_predict: 150, seed: 1 } })
  t.equal(chat.done_reason, 'stop', 'the grammar closed the object')
  t.ok(validate(JSON.parse(chat.message.content)), `chat: ${chat.message.content}`)
  let streamed = ''
  for await (const part of await ollama.chat({ model: 'acme/qwen', messages: [{ role: 'user', content: 'another' }], format: PERSON, stream: true, options: { num_predict: 150, seed: 2 } })) {
    streamed += part.message.content ?? ''
  }
  t.ok(validate(JSON.parse(streamed)), `chat streamed: ${streamed}`)
  const generated = await ollama.generate({ model: 'acme/qwen', prompt: 'a person', format: PERSON, options: { num_predict: 150, seed: 3 } })
  t.ok(validate(JSON.parse(generated.response ?? '')), `generate: ${generated.response}`)
  const json = await ollama.chat({ model: 'acme/qwen', messages: [{ role: 'user', content: 'json' }], format: 'json', options: { num_predict: 60, seed: 4 } })
  if (json.done_reason === 'stop') t.doesNotThrow(() => JSON.parse(json.message.content), `format "json": ${json.message.content}`)
  else t.match(json.message.content, /^\s*[{[]/, 'format "json" cut by num_predict still starts as JSON')
})

t.test('tools reach the model\'s template (random weights call none on their own): the prompt grows by the rendered tools', async (t) => {
  const { url } = await qwen()
  const ollama = new Ollama({ host: url })
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
  const plain = await ollama.chat({ model: 'acme/qwen', messages, options: { num_predict: 1 } })
  const tool = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] } } }
  const withTools = await ollama.chat({ model: 'acme/qwen', messages, tools: [tool], options: { num_predict: 1 } })
  // Qwen2.5's template writes each tool's JSON inside <tools></tools> with instructions: dozens of tokens.
  t.ok(withTools.prompt_eval_count > plain.prompt_eval_count + 40, `prompt ${plain.prompt_eval_count} -> ${withTools.prompt_eval_count} tokens with the tool`)
})

t.test('a tool result in the history (role "tool" with tool_name) reaches the template', async (t) => {
  const { url } = await qwen()
  const ollama = new Ollama({ host: url })
  const asked = [{ role: 'user', content: 'weather?' }]
  const answered = [
    ...asked,
    { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
    { role: 'tool', content: '{"temperature": 21, "sky": "clear and bright over the river"}', tool_name: 'get_weather' },
  ]
  const before = await ollama.chat({ model: 'acme/qwen', messages: asked, options: { num_predict: 1 } })
  const after = await ollama.chat({ model: 'acme/qwen', messages: answered, options: { num_predict: 1 } })
  t.ok(after.prompt_eval_count > before.prompt_eval_count + 15, `prompt ${before.prompt_eval_count} -> ${after.prompt_eval_count} tokens with the call and its result`)
})

t.test('bad format and tools: 400 with a message', async (t) => {
  const { url } = await qwen()
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['format of another type', { format: 5 }, /format/],
    ['format an unknown word', { format: 'yaml' }, /format/],
    ['a tool without a function', { tools: [{ type: 'function' }] }, /function/],
    ['a tool with an empty name', { tools: [{ type: 'function', function: { name: '' } }] }, /name/],
  ]
  for (const [what, extra, message] of cases) {
    const res = await fetch(`${url}/api/chat`, { method: 'POST', body: JSON.stringify({ model: 'acme/qwen', messages: [{ role: 'user', content: 'hi' }], stream: false, ...extra }) })
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { error: message }, `${what}: says why`)
  }
})

t.test('a model that calls a tool: the call comes back as tool_calls with parsed arguments, whole and streamed', async (t) => {
  // The "caller" fixture opens <tool_call> at once; llama-server's own grammar writes the call from the tool's schema.
  const { url } = await serveRealisticModels(t, { 'acme/caller': 'caller' })
  const ollama = new Ollama({ host: url })
  const tool = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Tokyo'] } }, required: ['city'] } } }
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
  const whole = await ollama.chat({ model: 'acme/caller', messages, tools: [tool], options: { num_predict: 200, temperature: 0.2, seed: 1 } })
  t.equal(whole.message.content, '', 'no text beside the call')
  t.ok((whole.message.tool_calls ?? []).length >= 1, `calls: ${JSON.stringify(whole.message.tool_calls)}`)
  for (const call of whole.message.tool_calls ?? []) {
    t.equal(call.function.name, 'get_weather')
    t.ok(['Paris', 'Tokyo'].includes((call.function.arguments as { city?: string }).city ?? ''), `arguments parsed to an object: ${JSON.stringify(call.function.arguments)}`)
  }
  t.equal(whole.done_reason, 'stop', 'the turn ended after the call')

  const parts = []
  for await (const part of await ollama.chat({ model: 'acme/caller', messages, tools: [tool], stream: true, options: { num_predict: 200, temperature: 0.2, seed: 2 } })) parts.push(part)
  const withCalls = parts.filter((p) => (p.message.tool_calls ?? []).length > 0)
  t.equal(withCalls.length, 1, 'streamed: the calls arrive in one event, whole, as Ollama sends them')
  t.equal(withCalls[0]?.message.tool_calls?.[0]?.function.name, 'get_weather')
  t.ok(parts.at(-1)?.done, 'then the last event')
})
