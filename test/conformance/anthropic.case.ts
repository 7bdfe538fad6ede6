import t from 'tap'
import { anthropicSpec } from '../helpers/api-specs.js'
import { post } from '../helpers/inference.js'
import { checkMessageStream, fits, sseOf } from '../helpers/spec-streams.js'
import { conformanceServer as server } from './conformance-server.js'

type Json = Record<string, any>

// What /v1/messages and Anthropic's /v1/models answer, judged by Anthropic's types (its SDK's, written as JSON Schema
// in test/fixtures/specs/anthropic with their source lines): whole messages, every stream event and its order, token
// counts, models, errors. The models are tiny and random: the shapes are the test.

const WEATHER = { name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { enum: ['Paris', 'Lima'] } }, required: ['city'], additionalProperties: false } }
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
const MESSAGE = anthropicSpec('Message')
const ERROR = anthropicSpec('ErrorResponse')
const ANTHROPIC = { 'anthropic-version': '2023-06-01' }

t.test('POST /v1/messages: text, thinking, stop sequences, tools chosen and forced; whole and streamed', async (t) => {
  const { url } = await server()
  const cases = [
    ['text', { model: 'acme/qwen', max_tokens: 8, messages }],
    ['text to its limit', { model: 'acme/qwen', max_tokens: 8, messages, options: { ignore_eos: true } }],
    ['a system prompt and stop sequences', { model: 'acme/qwen', max_tokens: 8, system: 'Be brief.', stop_sequences: ['e', 'a'], messages }],
    ['thinking (DeepSeek-R1\'s template)', { model: 'acme/r1', max_tokens: 24, messages }],
    ['tools, the model\'s own call', { model: 'acme/caller', max_tokens: 200, messages, tools: [WEATHER] }],
    ['tool_choice any', { model: 'acme/qwen', max_tokens: 200, messages, tools: [WEATHER], tool_choice: { type: 'any' } }],
    ['tool_choice tool', { model: 'acme/qwen', max_tokens: 200, messages, tools: [WEATHER], tool_choice: { type: 'tool', name: 'get_weather' } }],
  ] as const
  const wholes: Json[] = []
  for (const [what, body] of cases) {
    const whole = await (await post(`${url}/v1/messages`, body, ANTHROPIC)).json() as Json
    fits(t, MESSAGE, whole, `${what}: whole`)
    wholes.push(whole)
    const events = checkMessageStream(t, await sseOf(await post(`${url}/v1/messages`, { ...body, stream: true }, ANTHROPIC)), `${what}: streamed`)
    t.ok(events.at(-2)!.delta.stop_reason !== null, `${what}: the stream says why it stopped`)
  }
  t.equal(wholes[4]!.stop_reason, 'tool_use', 'the caller called')
  t.equal(wholes[3]!.content[0]?.type, 'thinking', 'R1 thinks first')
})

t.test('POST /v1/messages/count_tokens', async (t) => {
  const { url } = await server()
  fits(t, anthropicSpec('MessageTokensCount'), await (await post(`${url}/v1/messages/count_tokens`, { model: 'acme/qwen', messages, tools: [WEATHER] }, ANTHROPIC)).json(), 'a count')
})

t.test('GET /v1/models and /v1/models/{id} as Anthropic\'s SDKs ask (anthropic-version)', async (t) => {
  const { url } = await server()
  const page = await (await fetch(`${url}/v1/models`, { headers: ANTHROPIC })).json()
  fits(t, anthropicSpec('ModelInfosPage'), page, 'the page')
  const model = await (await fetch(`${url}/v1/models/acme/r1`, { headers: ANTHROPIC })).json() as Json
  fits(t, anthropicSpec('ModelInfo'), model, 'a model')
  t.ok(model.max_input_tokens > 0, 'its context, from the GGUF')
  t.equal(model.capabilities.thinking.supported, true, 'R1 thinks')
})

t.test('errors: a bad request, an unknown model, an unknown tool to force; a stream\'s error event', async (t) => {
  const { url } = await server()
  const cases = [
    [400, { model: 'acme/qwen', max_tokens: 4, messages: [] }],
    [404, { model: 'acme/nope', max_tokens: 4, messages }],
    [400, { model: 'acme/qwen', max_tokens: 4, messages, tools: [WEATHER], tool_choice: { type: 'tool', name: 'nope' } }],
  ] as const
  for (const [status, body] of cases) {
    const res = await post(`${url}/v1/messages`, body, ANTHROPIC)
    t.equal(res.status, status)
    fits(t, ERROR, await res.json(), `a ${status}`)
  }
  // A model stopped mid-stream: the stream ends with Anthropic's `event: error`.
  const res = await post(`${url}/v1/messages`, { model: 'acme/qwen', max_tokens: 900, stream: true, messages, options: { ignore_eos: true } }, ANTHROPIC)
  const reader = res.body!.getReader()
  let text = ''
  while (!text.includes('content_block_delta')) text += new TextDecoder().decode((await reader.read()).value)
  t.equal((await post(`${url}/api/stop`, { model: 'acme/qwen' })).status, 200)
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
  const last = text.trim().split('\n\n').at(-1)!
  t.match(last, /^event: error\ndata: /, 'the error event, named')
  fits(t, ERROR, JSON.parse(last.split('\ndata: ')[1]!), 'the stream\'s error')
})
