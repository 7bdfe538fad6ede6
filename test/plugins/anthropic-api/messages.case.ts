import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { post, serveTinyModels, sharedServer } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const tiny = sharedServer(() => serveTinyModels(t))

// Anthropic's Messages API through the official SDK, against the real gateway and llama-server. The tiny
// model has random weights: what it says is noise, so the tests check shapes, counts and the path taken.

t.test('messages.create, not streamed: Anthropic\'s message shape with our model name', async (t) => {
  const { url } = await tiny()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const message = await client.messages.create({ model: 'acme/tiny', max_tokens: 6, messages: [{ role: 'user', content: 'hi' }] })
  // llama-server names them like its chat completions (`chatcmpl-...`), not `msg_...`; clients only need an id.
  t.match(message.id, /^\S{8,}$/)
  const again = await client.messages.create({ model: 'acme/tiny', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })
  t.not(again.id, message.id, 'one id per message')
  t.equal(message.type, 'message')
  t.equal(message.role, 'assistant')
  t.equal(message.model, 'acme/tiny')
  t.equal(message.content[0]?.type, 'text')
  t.ok(['end_turn', 'max_tokens', 'stop_sequence'].includes(message.stop_reason ?? ''), `stop_reason ${message.stop_reason}`)
  t.ok(message.usage.input_tokens > 0, 'input tokens counted')
  t.ok(message.usage.output_tokens >= 1 && message.usage.output_tokens <= 6, `output tokens within max_tokens (${message.usage.output_tokens})`)
})

t.test('messages.create streamed: Anthropic\'s events in order, ending with message_stop; the final message assembles', async (t) => {
  const { url } = await tiny()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  // Greedy (top_k 1): the streamed answer must be the same text as the whole one.
  const request = { model: 'acme/tiny', max_tokens: 8, top_k: 1, system: 'be brief', messages: [{ role: 'user' as const, content: 'hello there' }] }
  const whole = await client.messages.create(request)
  const stream = client.messages.stream(request)
  const types: string[] = []
  for await (const event of stream) types.push(event.type)
  const final = await stream.finalMessage()
  t.equal(types[0], 'message_start')
  t.equal(types.at(-1), 'message_stop')
  t.ok(types.includes('message_delta'), 'a message_delta with the stop reason')
  t.equal(final.model, 'acme/tiny')
  t.equal(final.role, 'assistant')
  t.ok(final.usage.output_tokens >= 1, 'output counted')
  const text = (m: { content: Array<{ type: string, text?: string }> }): string => m.content.map((b) => (b.type === 'text' ? b.text ?? '' : '')).join('')
  t.equal(text(final), text(whole), 'the deltas make the same answer as the whole message')
  t.equal(final.usage.output_tokens, whole.usage.output_tokens)
  t.equal(types.filter((ty) => ty === 'content_block_delta').length > 0, text(whole) !== '', 'text came as deltas exactly when there was text')
})

t.test('messages.countTokens: the prompt\'s tokens, counted by the model\'s own tokenizer', async (t) => {
  const { url } = await tiny()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const short = await client.messages.countTokens({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }] })
  const long = await client.messages.countTokens({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi '.repeat(40) }] })
  t.ok(short.input_tokens > 0)
  t.ok(long.input_tokens > short.input_tokens + 20, `${long.input_tokens} > ${short.input_tokens} + 20`)
})

t.test('errors come in Anthropic\'s shape, with its error types', async (t) => {
  const { url } = await tiny()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const missing = await client.messages.create({ model: 'acme/nope', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
  t.ok(missing instanceof Anthropic.NotFoundError, 'the SDK reads a 404 as NotFoundError')
  t.match((missing as InstanceType<typeof Anthropic.NotFoundError>).error, { type: 'error', error: { type: 'not_found_error', message: /model "acme\/nope" not found/ } })

  const cases: Array<[string, unknown, RegExp]> = [
    ['no messages', { model: 'acme/tiny', max_tokens: 4 }, /messages/],
    ['empty messages', { model: 'acme/tiny', max_tokens: 4, messages: [] }, /messages/],
    ['a bad role', { model: 'acme/tiny', max_tokens: 4, messages: [{ role: 'robot', content: 'hi' }] }, /role/],
    ['a tool without a name', { model: 'acme/tiny', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }], tools: [{ input_schema: {} }] }, /name/],
    ['max_tokens 0', { model: 'acme/tiny', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] }, /max_tokens/],
    ['a text block whose text is not a string', { model: 'acme/tiny', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: 42 }] }] }, /content\/0\/text must be string/],
    ['an invalid model name', { model: 'no-owner', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }, /invalid model name/],
  ]
  for (const [what, body, message] of cases) {
    const res = await post(`${url}/v1/messages`, body)
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { type: 'error', error: { type: 'invalid_request_error', message } }, `${what}: Anthropic's shape`)
  }
})

t.test('a runtime that refuses a streamed request: Anthropic\'s error shape and status, before any event', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 64, num_parallel: 1 } })
  // Loaded first: a request that waits for a load over two seconds has its head (and progress) out before the refusal.
  t.equal((await post(`${url}/v1/messages`, { model: 'acme/tiny', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })).status, 200)
  const res = await post(`${url}/v1/messages`, { model: 'acme/tiny', max_tokens: 4, stream: true, messages: [{ role: 'user', content: 'word '.repeat(3000) }] })
  t.equal(res.status, 400)
  t.match(await res.json(), { type: 'error', error: { type: 'invalid_request_error', message: /^prompt is too long: \d+ tokens > 2048 maximum$/ } })
})

t.test('with API keys on, the SDK\'s x-api-key is accepted; a wrong one is authentication_error', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { auth: { api_keys: ['sekret'] } })
  const good = new Anthropic({ baseURL: url, apiKey: 'sekret', maxRetries: 0 })
  const message = await good.messages.create({ model: 'acme/tiny', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(message.type, 'message')
  const bad = new Anthropic({ baseURL: url, apiKey: 'wrong', maxRetries: 0 })
  const err = await bad.messages.create({ model: 'acme/tiny', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
  t.ok(err instanceof Anthropic.AuthenticationError)
  t.match((err as InstanceType<typeof Anthropic.AuthenticationError>).error, { type: 'error', error: { type: 'authentication_error', message: 'invalid API key' } })
})
