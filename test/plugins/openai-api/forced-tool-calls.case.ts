import { Ajv } from 'ajv'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// A tool choice that forces a call, through the official openai client, on tiny random-weight models with Qwen2.5's
// real vocabulary and template (test/helpers/realistic-models.ts). `acme/qwen` has random weights and never opens a
// call on its own (llama-server's own "required" lets it write prose to its limit); `acme/agent` closes strings at
// once, for a tool whose arguments are strings. Whatever the model would say, the answer must be a call to an offered
// tool (or the named one), its arguments valid against that tool's schema.
const server = sharedServer(() => serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/agent': 'agent' }))

const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Tokyo', 'Lima'] }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'], additionalProperties: false },
  },
}
const CLOCK = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    description: 'The time in a zone',
    parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] }, seconds: { type: 'boolean' } }, required: ['zone'] },
  },
}
const READ = {
  type: 'function' as const,
  function: { name: 'Read', description: 'Reads a file', parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
}
const TOOLS = [WEATHER, CLOCK]
const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]

const ajv = new Ajv({ strict: false })
const validators = new Map([WEATHER, CLOCK, READ].map((tool) => [tool.function.name, ajv.compile(tool.function.parameters)]))

type Call = { id: string, type: string, function: { name: string, arguments: string } }

/** Every call is to one of `names`, with an id and arguments that parse and fit the tool's schema. */
function checkCalls (t: Test, calls: Call[] | undefined, names: string[], what: string): void {
  t.ok(calls !== undefined && calls.length >= 1, `${what}: at least one call (${JSON.stringify(calls)})`)
  for (const call of calls ?? []) {
    t.match(call.id, /^call_\w{8,}$/, `${what}: the call has an id`)
    t.equal(call.type, 'function')
    t.ok(names.includes(call.function.name), `${what}: ${call.function.name} is one of ${names.join(', ')}`)
    const validate = validators.get(call.function.name)!
    t.ok(validate(JSON.parse(call.function.arguments)), `${what}: ${call.function.arguments} fits ${call.function.name}'s schema ${ajv.errorsText(validate.errors)}`)
  }
}

t.test('chat completions, tool_choice "required": a call to an offered tool, whole and streamed', async (t) => {
  const { url } = await server()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  for (const seed of [1, 2, 3]) {
    const whole = await client.chat.completions.create({ model: 'acme/qwen', max_tokens: 300, seed, messages, tools: TOOLS, tool_choice: 'required' })
    const choice = whole.choices[0]!
    t.equal(choice.finish_reason, 'tool_calls', `seed ${seed}: finished with the calls`)
    t.equal(choice.message.content, null, 'no text: the answer is the call')
    checkCalls(t, choice.message.tool_calls as Call[], ['get_weather', 'get_time'], `seed ${seed}, whole`)

    const stream = client.chat.completions.stream({ model: 'acme/qwen', max_tokens: 300, seed, messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false })
    const final = await stream.finalChatCompletion()
    t.equal(final.choices[0]!.finish_reason, 'tool_calls', `seed ${seed}, streamed: finished with the call`)
    t.equal(final.choices[0]!.message.tool_calls?.length, 1, 'parallel_tool_calls false: one call')
    checkCalls(t, final.choices[0]!.message.tool_calls as Call[], ['get_weather', 'get_time'], `seed ${seed}, streamed`)
  }
})

t.test('chat completions, a named function: that function, once, whole and streamed', async (t) => {
  const { url } = await server()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const tool_choice = { type: 'function' as const, function: { name: 'get_time' } }
  const whole = await client.chat.completions.create({ model: 'acme/qwen', max_tokens: 300, seed: 4, messages, tools: TOOLS, tool_choice })
  t.equal(whole.choices[0]!.message.tool_calls?.length, 1)
  checkCalls(t, whole.choices[0]!.message.tool_calls as Call[], ['get_time'], 'whole')
  // Streamed by hand: the chunks as an agent reads them, the usage chunk last.
  const chunks = await client.chat.completions.create({ model: 'acme/qwen', max_tokens: 300, seed: 5, messages, tools: TOOLS, tool_choice, stream: true, stream_options: { include_usage: true } })
  let name = ''
  let args = ''
  const created = new Set<number>()
  const seen: string[] = []
  for await (const chunk of chunks) {
    created.add(chunk.created)
    if (chunk.choices.length === 0) { seen.push('usage'); t.ok(chunk.usage!.completion_tokens > 0); continue }
    t.equal(chunk.usage, null, 'usage: null on the chunks before the last')
    for (const call of chunk.choices[0]!.delta.tool_calls ?? []) {
      t.equal(call.index, 0)
      name += call.function?.name ?? ''
      args += call.function?.arguments ?? ''
    }
    if (chunk.choices[0]!.finish_reason) seen.push(chunk.choices[0]!.finish_reason)
  }
  t.same(seen, ['tool_calls', 'usage'], 'the finish, then the usage chunk')
  t.equal(created.size, 1, 'one created for the whole stream')
  checkCalls(t, [{ id: 'call_streamedbyhand', type: 'function', function: { name, arguments: args } }], ['get_time'], 'streamed')
  const unknown = await client.chat.completions.create({ model: 'acme/qwen', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }).catch((e: unknown) => e)
  t.ok(unknown instanceof OpenAI.BadRequestError, 'a function not offered: 400')
})

t.test('string arguments: the agent fixture closes them; the call still fits the schema', async (t) => {
  const { url } = await server()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const whole = await client.chat.completions.create({ model: 'acme/agent', max_tokens: 200, seed: 1, messages, tools: [READ, WEATHER], tool_choice: { type: 'function', function: { name: 'Read' } } })
  checkCalls(t, whole.choices[0]!.message.tool_calls as Call[], ['Read'], 'named Read')
})

t.test('responses, tool_choice "required" and a named function: function_call items that fit, whole and streamed', async (t) => {
  const { url } = await server()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const tools = TOOLS.map((tool) => ({ type: 'function' as const, name: tool.function.name, description: tool.function.description, parameters: tool.function.parameters, strict: false }))
  for (const [tool_choice, names] of [['required', ['get_weather', 'get_time']], [{ type: 'function', name: 'get_weather' }, ['get_weather']]] as const) {
    const whole = await client.responses.create({ model: 'acme/qwen', input: 'Weather?', max_output_tokens: 300, tools, tool_choice: tool_choice as never, store: false })
    const calls = whole.output.filter((item) => item.type === 'function_call')
    t.equal(whole.status, 'completed', `${JSON.stringify(tool_choice)}: completed`)
    checkCalls(t, calls.map((c) => ({ id: c.call_id, type: 'function', function: { name: c.name, arguments: c.arguments } })), [...names], `responses ${JSON.stringify(tool_choice)}, whole`)
    const stream = client.responses.stream({ model: 'acme/qwen', input: 'Weather?', max_output_tokens: 300, tools, tool_choice: tool_choice as never, store: false })
    const final = await stream.finalResponse()
    const streamed = final.output.filter((item) => item.type === 'function_call')
    checkCalls(t, streamed.map((c) => ({ id: c.call_id, type: 'function', function: { name: c.name, arguments: c.arguments } })), [...names], `responses ${JSON.stringify(tool_choice)}, streamed`)
  }
})
