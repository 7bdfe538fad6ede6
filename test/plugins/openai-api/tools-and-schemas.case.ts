import { Ajv } from 'ajv'
import OpenAI from 'openai'
import t from 'tap'
import { serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const qwen = sharedServer(() => serveRealisticModels(t, { 'acme/qwen': 'qwen25' }))

// Tools and structured output through the official OpenAI client, on a tiny random-weight model with
// Qwen2's real vocabulary and Qwen2.5-Instruct's real template (test/helpers/realistic-models.ts): the
// words are noise, but llama-server's grammars hold them to the shapes asked for.

const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'], additionalProperties: false },
  },
}

const PERSON = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 }, tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 } },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
}

// The pinned llama.cpp no longer forces a call under tool_choice "required" (content may come first: its own
// tests say so), and random weights write none on their own: the gateway forces it with a grammar of its
// own (forced-tool-calls.case.ts). What this test holds is that the tools reach llama-server and its template, in
// both directions of the conversation, "required" or not.
t.test('tools and tool_choice reach the template: the prompt grows by the rendered tools; "required" is accepted', async (t) => {
  const { url } = await qwen()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]
  const plain = await client.chat.completions.create({ model: 'acme/qwen', max_tokens: 1, messages })
  const withTools = await client.chat.completions.create({ model: 'acme/qwen', max_tokens: 1, messages, tools: [WEATHER], tool_choice: 'required', parallel_tool_calls: false })
  const plainTokens = plain.usage!.prompt_tokens
  const toolTokens = withTools.usage!.prompt_tokens
  // Qwen2.5's template writes each tool's JSON schema inside <tools></tools> with instructions: dozens of tokens.
  t.ok(toolTokens > plainTokens + 40, `prompt ${plainTokens} -> ${toolTokens} tokens with the tool`)
  const history = await client.chat.completions.create({
    model: 'acme/qwen', max_tokens: 1,
    messages: [...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","days":1}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21, "sky": "clear over the river"}' }],
    tools: [WEATHER],
  })
  t.ok(history.usage!.prompt_tokens > toolTokens + 15, `a call and its result in the history: ${history.usage!.prompt_tokens} tokens`)
})

t.test('response_format json_schema: the content parses and validates against the schema', async (t) => {
  const { url } = await qwen()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const validate = new Ajv().compile(PERSON)
  for (const seed of [1, 2]) {
    const completion = await client.chat.completions.create({
      model: 'acme/qwen', max_tokens: 200, seed,
      messages: [{ role: 'user', content: 'Describe a person.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
    })
    const content = completion.choices[0]!.message.content ?? ''
    t.equal(completion.choices[0]!.finish_reason, 'stop', 'the grammar closed the object before max_tokens')
    t.ok(validate(JSON.parse(content)), `seed ${seed}: ${content} fits the schema`)
  }
})

t.test('bad tool definitions and schemas: 400 in OpenAI\'s shape', async (t) => {
  const { url } = await qwen()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const base = { model: 'acme/qwen', max_tokens: 4, messages: [{ role: 'user' as const, content: 'hi' }] }
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a tool without a function name', { tools: [{ type: 'function', function: { parameters: {} } }] }, /name/],
    ['a tool of a type llama-server cannot call', { tools: [{ type: 'custom', custom: { name: 'grep' }, function: { name: 'grep' } }] }, /tools\/0\/type must be "function"/],
    ['a response_format of an unknown type', { response_format: { type: 'xml' } }, /response_format/],
    ['a json_schema that is not a schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'no-such-type' } } } }, /./],
  ]
  for (const [what, extra, message] of cases) {
    const err = await client.chat.completions.create({ ...base, ...extra } as never).catch((e: unknown) => e)
    t.ok(err instanceof OpenAI.BadRequestError, `${what}: 400`)
    t.match((err as InstanceType<typeof OpenAI.BadRequestError>).error, { message, type: 'invalid_request_error' }, `${what}: says why`)
  }
})
