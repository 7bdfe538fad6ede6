import Anthropic from '@anthropic-ai/sdk'
import { Ajv } from 'ajv'
import t, { type Test } from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// Anthropic's tool_choice that forces a call (`any`, a named tool), through the official SDK, on tiny random-weight
// models with Qwen2.5's real vocabulary and template: `acme/qwen` never calls a tool on its own, `acme/agent` closes
// strings at once. The answer must be tool_use blocks for offered tools (or the named one) with inputs valid against
// each tool's input_schema, streamed or not.
const server = sharedServer(() => serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/agent': 'agent' }))

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { enum: ['Paris', 'Tokyo', 'Lima'] }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'] },
}
const CLOCK = {
  name: 'get_time',
  description: 'The time in a zone',
  input_schema: { type: 'object' as const, properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] },
}
const READ = { name: 'Read', description: 'Reads a file', input_schema: { type: 'object' as const, properties: { file_path: { type: 'string' } }, required: ['file_path'] } }
const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]

const ajv = new Ajv({ strict: false })
const validators = new Map([WEATHER, CLOCK, READ].map((tool) => [tool.name, ajv.compile(tool.input_schema)]))

/**
 * The message holds tool_use blocks only, each to one of `names`, with an id and an input that fits the tool's schema.
 * `parallel`: calls may follow one another, and a random model may go on calling until max_tokens cuts it.
 */
function checkToolUse (t: Test, message: Anthropic.Message, names: string[], what: string, parallel = false): void {
  if (parallel) t.ok(message.stop_reason === 'tool_use' || message.stop_reason === 'max_tokens', `${what}: stopped for the calls, or cut while calling (${message.stop_reason})`)
  else t.equal(message.stop_reason, 'tool_use', `${what}: stopped for the call`)
  const uses = message.content.filter((block) => block.type === 'tool_use')
  t.ok(uses.length >= 1, `${what}: at least one tool_use (${JSON.stringify(message.content)})`)
  t.equal(uses.length, message.content.length, `${what}: nothing but calls`)
  for (const use of uses) {
    t.match(use.id, /^toolu_\w{8,}$/, `${what}: an id in Anthropic's form`)
    t.ok(names.includes(use.name), `${what}: ${use.name} is one of ${names.join(', ')}`)
    const validate = validators.get(use.name)!
    t.ok(validate(use.input), `${what}: ${JSON.stringify(use.input)} fits ${use.name}'s schema ${ajv.errorsText(validate.errors)}`)
  }
}

t.test('tool_choice any and a named tool: tool_use blocks that fit, whole and streamed', async (t) => {
  const { url } = await server()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const tools = [WEATHER, CLOCK]
  for (const seed of [1, 2]) {
    // Another question each time: another answer from the random weights (the SDK's types take no seed).
    const asked = [{ role: 'user' as const, content: `What is the weather in Paris in ${seed} days?` }]
    const any = await client.messages.create({ model: 'acme/qwen', max_tokens: 300, messages: asked, tools, tool_choice: { type: 'any' } })
    checkToolUse(t, any, ['get_weather', 'get_time'], `any, seed ${seed}, whole`, true)
    t.ok(any.usage.input_tokens + (any.usage.cache_read_input_tokens ?? 0) > 40, 'the prompt counted, tools included (what the slot had cached apart)')
    const stream = client.messages.stream({ model: 'acme/qwen', max_tokens: 300, messages: asked, tools, tool_choice: { type: 'any', disable_parallel_tool_use: true } })
    const final = await stream.finalMessage()
    checkToolUse(t, final, ['get_weather', 'get_time'], `any, seed ${seed}, streamed`)
    t.equal(final.content.length, 1, 'disable_parallel_tool_use: one call')
  }
  const named = await client.messages.create({ model: 'acme/qwen', max_tokens: 300, messages, tools, tool_choice: { type: 'tool', name: 'get_time' } })
  checkToolUse(t, named, ['get_time'], 'named, whole')
  t.equal(named.content.length, 1, 'a named tool is called once')
  const streamed = await client.messages.stream({ model: 'acme/qwen', max_tokens: 300, messages, tools, tool_choice: { type: 'tool', name: 'get_weather' } }).finalMessage()
  checkToolUse(t, streamed, ['get_weather'], 'named, streamed')
  const strings = await client.messages.create({ model: 'acme/agent', max_tokens: 200, messages, tools: [READ, WEATHER], tool_choice: { type: 'tool', name: 'Read' } })
  checkToolUse(t, strings, ['Read'], 'string arguments (the agent fixture)')
  const unknown = await client.messages.create({ model: 'acme/qwen', max_tokens: 4, messages, tools, tool_choice: { type: 'tool', name: 'nope' } }).catch((e: unknown) => e)
  t.ok(unknown instanceof Anthropic.BadRequestError, 'a tool not offered: 400')
})

t.test('a forced call streams as Anthropic does: message_start, each block started, filled, stopped, then message_delta', async (t) => {
  const { url } = await server()
  const res = await post(`${url}/v1/messages`, { model: 'acme/qwen', max_tokens: 300, stream: true, messages, tools: [WEATHER, CLOCK], tool_choice: { type: 'any' } })
  // Each event named as its type is (`event: <type>`), as Anthropic's are.
  const events = (await res.text()).split('\n\n').filter((e) => e !== '').map((e) => {
    const [name, data] = e.split('\n')
    const event = JSON.parse(data!.slice('data: '.length)) as { type: string, index?: number, content_block?: { type: string }, delta?: { type?: string }, message?: { usage: { input_tokens: number, cache_read_input_tokens: number } } }
    t.equal(name, `event: ${event.type}`)
    return event
  })
  t.equal(events[0]!.type, 'message_start')
  const usage = events[0]!.message!.usage
  t.ok(usage.input_tokens + usage.cache_read_input_tokens > 40, 'message_start counts the prompt')
  t.same(events.slice(-2).map((e) => e.type), ['message_delta', 'message_stop'])
  let open: number | null = null
  let next = 0
  for (const event of events.slice(1, -2)) {
    if (event.type === 'content_block_start') {
      t.equal(open, null, `block ${event.index} starts after the last stopped`)
      t.equal(event.index, next++)
      t.equal(event.content_block!.type, 'tool_use')
      open = event.index!
    } else if (event.type === 'content_block_delta') {
      t.equal(event.index, open)
      t.equal(event.delta!.type, 'input_json_delta')
    } else {
      t.equal(event.type, 'content_block_stop')
      t.equal(event.index, open)
      open = null
    }
  }
  t.ok(next >= 1, `${next} tool_use block(s)`)
})
