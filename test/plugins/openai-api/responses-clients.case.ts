import { createOpenAI } from '@ai-sdk/openai'
import { generateText, streamText, tool } from 'ai'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { z } from 'zod'
import { serveRealisticModels } from '../../helpers/inference.js'

// /v1/responses through the clients that read its stream closely: the official openai SDK (its ResponseStream
// accumulates by output_index and content_index) and the AI SDK's @ai-sdk/openai, which validates every event
// against OpenAI's schema (sequence_number, output_index, item_id). Realistic tiny models on the real llama-server:
// `caller` calls one of the request's tools, `r1` reasons first, `qwen` writes text.

type Event = OpenAI.Responses.ResponseStreamEvent

// qwen writes to the limit (ignore_eos): a random-weight model may end its turn at any token, and the tests count them.
const server = serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/caller': 'caller', 'acme/r1': 'r1' }, { models: { 'acme/qwen': { options: { ignore_eos: true } } } })
const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Tokyo'] } }, required: ['city'] },
}

async function openai (): Promise<OpenAI> {
  return new OpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused', maxRetries: 0 })
}

/** Every event numbered 0, 1, 2 ...; each delta inside an item opened before it and closed after it, at its index. */
function checkOrder (t: Test, events: Event[]): void {
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'sequence_number 0, 1, 2 ... without a gap')
  t.same(events.slice(0, 2).map((e) => e.type), ['response.created', 'response.in_progress'])
  const open = new Map<number, string>()
  let next = 0
  for (const e of events) {
    if (e.type === 'response.output_item.added') {
      t.equal(e.output_index, next++, `${e.item.type} added at the next output_index`)
      open.set(e.output_index, e.item.id!)
    } else if ('output_index' in e && 'item_id' in e) {
      t.equal(open.get(e.output_index), e.item_id, `${e.type}: item_id is the open item at output_index ${e.output_index}`)
    }
    if (e.type === 'response.output_item.done') {
      t.equal(open.get(e.output_index), e.item.id, 'output_item.done closes the item opened at its index')
      open.delete(e.output_index)
    }
    if ('content_index' in e) t.equal(e.content_index, 0, `${e.type}: content_index 0`)
  }
  t.equal(open.size, 0, 'every item closed')
}

t.test('openai SDK: a text stream, numbered and indexed as OpenAI\'s; ResponseStream assembles the same text', async (t) => {
  const client = await openai()
  const events: Event[] = []
  for await (const event of await client.responses.create({ model: 'acme/qwen', input: 'hello', max_output_tokens: 8, stream: true })) events.push(event)
  checkOrder(t, events)
  t.same(events.map((e) => e.type).filter((type) => !type.endsWith('.delta')), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete',
  ], 'the events of one message item; incomplete at max_output_tokens')
  const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent
  t.match(last.response, { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, model: 'acme/qwen', usage: { output_tokens: 8 } })
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')
  const done = events.find((e) => e.type === 'response.output_text.done')
  t.equal(done?.text, deltas, 'output_text.done holds the deltas joined')

  const stream = client.responses.stream({ model: 'acme/qwen', input: 'hello', max_output_tokens: 8, temperature: 0 })
  const final = await stream.finalResponse()
  const whole = await client.responses.create({ model: 'acme/qwen', input: 'hello', max_output_tokens: 8, temperature: 0 })
  t.equal(final.output_text, whole.output_text, 'greedy: the streamed answer is the whole one')
  t.ok(final.output_text.length > 0)
  t.same(final.usage, whole.usage, 'the same usage, streamed or not')
})

t.test('openai SDK: a function call streamed as OpenAI\'s, then its output sent back', async (t) => {
  const client = await openai()
  const events: Event[] = []
  for await (const event of await client.responses.create({ model: 'acme/caller', input: 'Weather in Paris?', tools: [WEATHER], max_output_tokens: 100, temperature: 0, stream: true })) events.push(event)
  checkOrder(t, events)
  const added = events.find((e) => e.type === 'response.output_item.added')
  t.match(added, { item: { type: 'function_call', name: 'get_weather', arguments: '', call_id: /^call_/, id: /^fc_/, status: 'in_progress' } })
  const args = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('')
  t.match(events.find((e) => e.type === 'response.function_call_arguments.done'), { arguments: args, name: 'get_weather' })
  t.ok(['Paris', 'Tokyo'].includes(JSON.parse(args).city), `the arguments, by the grammar: ${args}`)
  const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent
  t.equal(completed.type, 'response.completed')
  const call = completed.response.output[0] as OpenAI.Responses.ResponseFunctionToolCall
  t.match(call, { type: 'function_call', status: 'completed', arguments: args, call_id: (added as any).item.call_id })
  t.match(completed.response.usage, { input_tokens: Number, input_tokens_details: { cached_tokens: Number }, output_tokens: Number, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: Number })

  const next = await client.responses.create({
    model: 'acme/caller', tools: [WEATHER], max_output_tokens: 100, temperature: 0,
    input: [{ role: 'user', content: 'Weather in Paris?' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
  })
  t.ok(next.usage!.input_tokens > completed.response.usage!.input_tokens, 'the call and its output are in the next prompt')
})

t.test('openai SDK: reasoning as OpenAI sends it for open models, a reasoning item of reasoning_text', async (t) => {
  const client = await openai()
  const events: Event[] = []
  for await (const event of await client.responses.create({ model: 'acme/r1', input: 'hi', max_output_tokens: 6, stream: true })) events.push(event)
  checkOrder(t, events)
  t.match(events[2], { type: 'response.output_item.added', item: { type: 'reasoning', id: /^rs_/, summary: [], content: [] } })
  t.match(events[3], { type: 'response.content_part.added', part: { type: 'reasoning_text', text: '' } })
  const text = events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join('')
  t.ok(text.length > 0)
  t.match(events.find((e) => e.type === 'response.reasoning_text.done'), { text })
  const final = await client.responses.stream({ model: 'acme/r1', input: 'hi', max_output_tokens: 6, reasoning: { effort: 'high' } }).finalResponse()
  t.match(final.output[0], { type: 'reasoning', content: [{ type: 'reasoning_text', text: String }] }, 'ResponseStream accumulates it')
  t.same(final.reasoning, { effort: 'high', summary: null }, 'the effort asked for (it went to the template) is echoed')
})

t.test('AI SDK openai.responses(): streamText of text, no validation error', async (t) => {
  const provider = createOpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused' })
  const result = streamText({ model: provider.responses('acme/qwen'), prompt: 'hello', maxOutputTokens: 8, temperature: 0 })
  const parts: Array<{ type: string, error?: unknown }> = []
  for await (const part of result.fullStream) parts.push(part)
  t.same(parts.filter((p) => p.type === 'error').map((p) => String(p.error)), [], 'no error part (AI_TypeValidationError before)')
  const text = await result.text
  t.ok(text.length > 0, `text assembled: ${JSON.stringify(text)}`)
  t.equal(await result.finishReason, 'length')
  t.equal((await result.usage).outputTokens, 8)
  const whole = await generateText({ model: provider.responses('acme/qwen'), prompt: 'hello', maxOutputTokens: 8, temperature: 0 })
  t.equal(whole.text, text, 'generateText: the same (greedy)')
})

t.test('AI SDK openai.responses(): a tool call with a zod schema, streamed and whole', async (t) => {
  const provider = createOpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused' })
  const tools = { get_weather: tool({ description: 'The weather in a city', inputSchema: z.object({ city: z.enum(['Paris', 'Tokyo']) }) }) }
  const result = streamText({ model: provider.responses('acme/caller'), prompt: 'Weather in Paris?', tools, maxOutputTokens: 100, temperature: 0 })
  const parts: Array<{ type: string, error?: unknown }> = []
  for await (const part of result.fullStream) parts.push(part)
  t.same(parts.filter((p) => p.type === 'error').map((p) => String(p.error)), [], 'no error part')
  t.ok(parts.some((p) => p.type === 'tool-input-delta'), 'the arguments streamed')
  const calls = await result.toolCalls
  t.equal(calls.length, 1)
  t.match(calls[0], { toolName: 'get_weather', input: { city: /^(Paris|Tokyo)$/ } }, 'assembled and validated by the zod schema')
  t.equal(await result.finishReason, 'tool-calls')
  const whole = await generateText({ model: provider.responses('acme/caller'), prompt: 'Weather in Paris?', tools, maxOutputTokens: 100, temperature: 0 })
  t.same(whole.toolCalls.map((c) => c.input), calls.map((c) => c.input), 'generateText: the same call')
})

t.test('AI SDK openai.responses(): a reasoning item is read without an error (its reasoning_text is not a summary)', async (t) => {
  const provider = createOpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused' })
  const result = streamText({ model: provider.responses('acme/r1'), prompt: 'hi', maxOutputTokens: 6 })
  const parts: Array<{ type: string, error?: unknown }> = []
  for await (const part of result.fullStream) parts.push(part)
  t.same(parts.filter((p) => p.type === 'error').map((p) => String(p.error)), [], 'no error part')
  t.ok(parts.some((p) => p.type === 'reasoning-start') && parts.some((p) => p.type === 'reasoning-end'), 'a reasoning part opened and closed')
})
