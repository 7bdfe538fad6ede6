import { createOpenAI } from '@ai-sdk/openai'
import { generateText } from 'ai'
import OpenAI from 'openai'
import t from 'tap'
import { firstEvent, post, serveRealisticModels } from '../../helpers/inference.js'

// The stateful side of the Responses API, kept by the gateway (plugins/openai-api/response-store.ts): stored
// responses, previous_response_id, item_reference, GET and DELETE /v1/responses/{id}; and how a stream ends
// when its model is stopped or its client leaves.

// qwen writes to the limit (ignore_eos): a random-weight model may end its turn at any token, and the tests want an
// answer cut at its limit, or still being written when it is stopped. Its whole trained context (4096), so that an
// answer left running holds its one slot for long (4000 tokens: about 20 s on 2 cores).
const server = serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/caller': 'caller' }, { models: { 'acme/qwen': { options: { ignore_eos: true, num_ctx: 4096 } } } })
const ASK = { model: 'acme/qwen', max_output_tokens: 4, temperature: 0 } as const

/** What the SDK threw: the status and code of OpenAI's error, or null when it did not throw. */
async function failure (promise: Promise<unknown>): Promise<{ status: number, code: string | null } | null> {
  try {
    await promise
    return null
  } catch (err) {
    const { status, code } = err as { status: number, code: string | null }
    return { status, code }
  }
}

async function openai (): Promise<OpenAI> {
  return new OpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused', maxRetries: 0 })
}

t.test('previous_response_id continues a conversation: the earlier turn (not its instructions) is in the prompt', async (t) => {
  const client = await openai()
  const first = await client.responses.create({ ...ASK, input: 'Say hi', instructions: 'Be brief.' })
  t.equal((first as unknown as { store: boolean }).store, true, 'stored by default, as OpenAI')
  const second = await client.responses.create({ ...ASK, input: 'And again', previous_response_id: first.id })
  t.equal(second.previous_response_id, first.id)
  t.ok(second.usage!.input_tokens > first.usage!.input_tokens + first.usage!.output_tokens, `the prompt grew by the earlier turn: ${first.usage!.input_tokens} + ${first.usage!.output_tokens} -> ${second.usage!.input_tokens}`)
  const explicit = await client.responses.create({ ...ASK, store: false, input: [{ role: 'user', content: 'Say hi' }, ...first.output as OpenAI.Responses.ResponseInputItem[], { role: 'user', content: 'And again' }] })
  t.equal(second.usage!.input_tokens, explicit.usage!.input_tokens, 'the same prompt as the conversation sent whole (instructions are not carried over, as OpenAI)')
  const third = await client.responses.create({ ...ASK, input: 'Once more', previous_response_id: second.id })
  t.ok(third.usage!.input_tokens > second.usage!.input_tokens + second.usage!.output_tokens, 'a chain: the third turn holds both before it')

  const fetched = await client.responses.retrieve(first.id)
  t.same({ id: fetched.id, output: fetched.output, usage: fetched.usage }, { id: first.id, output: first.output, usage: first.usage }, 'GET /v1/responses/{id}')
  t.same(await client.responses.delete(second.id), { id: second.id, object: 'response', deleted: true } as unknown, 'DELETE /v1/responses/{id}')
  t.same(await failure(client.responses.retrieve(second.id)), { status: 404, code: 'not_found' }, 'gone once deleted')
  t.same(await failure(client.responses.create({ ...ASK, input: 'x', previous_response_id: second.id })), { status: 400, code: 'previous_response_not_found' })
  t.ok(await client.responses.retrieve(third.id), 'a response that continued it keeps its whole conversation')
  t.ok(await client.responses.create({ ...ASK, input: 'x', previous_response_id: third.id }))
})

t.test('store: false keeps nothing; an unknown id is OpenAI\'s 400 previous_response_not_found; nothing crosses models', async (t) => {
  const client = await openai()
  const { url } = await server
  const unstored = await client.responses.create({ ...ASK, input: 'hi', store: false })
  t.equal((unstored as unknown as { store: boolean }).store, false)
  t.same(await failure(client.responses.retrieve(unstored.id)), { status: 404, code: 'not_found' }, 'not kept')
  const unknown = await post(`${url}/v1/responses`, { ...ASK, input: 'hi', previous_response_id: unstored.id })
  t.equal(unknown.status, 400)
  t.same(await unknown.json(), { error: { message: `Previous response with id '${unstored.id}' not found.`, type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } }, 'as OpenAI answers it')
  const stored = await client.responses.create({ ...ASK, input: 'hi' })
  const otherModel = await post(`${url}/v1/responses`, { ...ASK, model: 'acme/caller', input: 'hi', previous_response_id: stored.id })
  t.equal(otherModel.status, 400, 'a response continues only with the model that answered it')
  t.match(await otherModel.json(), { error: { code: 'previous_response_not_found' } })
  const notFound = await fetch(`${url}/v1/responses/resp_nope`)
  t.equal(notFound.status, 404)
  t.match(await notFound.json(), { error: { message: 'Response with id \'resp_nope\' not found.', type: 'invalid_request_error' } })
  const deleteUnknown = await fetch(`${url}/v1/responses/resp_nope`, { method: 'DELETE' })
  t.equal(deleteUnknown.status, 404)
})

t.test('item_reference: the AI SDK names its earlier answers by id when it stores; the prompt is the same as sent whole', async (t) => {
  const provider = createOpenAI({ baseURL: `${(await server).url}/v1`, apiKey: 'unused' })
  const model = provider.responses('acme/qwen')
  const first = await generateText({ model, prompt: 'Say hi', maxOutputTokens: 4, temperature: 0 })
  const messages = [{ role: 'user' as const, content: 'Say hi' }, ...first.response.messages, { role: 'user' as const, content: 'And again' }]
  const referenced = await generateText({ model, messages, maxOutputTokens: 4, temperature: 0 })
  const whole = await generateText({ model, messages, maxOutputTokens: 4, temperature: 0, providerOptions: { openai: { store: false } } })
  t.equal(referenced.usage.inputTokens, whole.usage.inputTokens, 'the referenced item read from the store')
  t.ok(referenced.usage.inputTokens! > first.usage.inputTokens!)
  const { url } = await server
  const unknown = await post(`${url}/v1/responses`, { ...ASK, input: [{ role: 'user', content: 'hi' }, { type: 'item_reference', id: 'msg_nope' }] })
  t.equal(unknown.status, 400)
  t.match(await unknown.json(), { error: { message: 'Item with id \'msg_nope\' not found.', code: 'item_not_found' } })
})

t.test('a stream whose model is stopped ends with OpenAI\'s error event and response.failed, still numbered', async (t) => {
  const { url } = await server
  const res = await post(`${url}/v1/responses`, { model: 'acme/qwen', input: 'go on', max_output_tokens: 900, stream: true })
  t.equal(res.status, 200)
  const first = await firstEvent(res)
  // Stopped once text has come: the failed response holds the message item begun.
  while (!(await first.next()).includes('response.output_text.delta'));
  const stop = await post(`${url}/api/stop`, { model: 'acme/qwen' })
  t.equal(stop.status, 200)
  const events = (await first.rest()).trim().split('\n\n').filter((e) => !e.startsWith(': ')).map((e) => {
    const [name, data] = e.split('\n')
    return { name: name!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) }
  })
  for (const e of events) t.equal(e.name, e.data.type, `event: ${e.name} names its type`)
  t.same(events.map((e) => e.data.sequence_number), events.map((_, i) => i), 'numbered without a gap to the end')
  const [error, failed] = events.slice(-2).map((e) => e.data)
  t.match(error, { type: 'error', code: 'model_stopped', message: /model "acme\/qwen" was stopped/, param: null })
  // The failed response's code is one of the document's ResponseErrorCode; the gateway's own leads its message.
  t.match(failed, { type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: /^model_stopped: .*was stopped/ }, output: [{ type: 'message', status: 'in_progress' }] } })
})

t.test('a client that leaves mid-stream frees its slot; the next request is served', async (t) => {
  const { url } = await server
  // This model's pace here and now (loaded first: the test before stopped it): what the leaving client's 4000 tokens
  // would hold the slot for if it kept it.
  await (await openai()).responses.create({ ...ASK, input: 'hi' })
  const paced = performance.now()
  const pace = await (await openai()).responses.create({ ...ASK, input: 'go on', max_output_tokens: 200 })
  const heldMs = 4000 * (performance.now() - paced) / pace.usage!.output_tokens
  const controller = new AbortController()
  const res = await post(`${url}/v1/responses`, { model: 'acme/qwen', input: 'go on', max_output_tokens: 4000, stream: true }, {}, controller.signal)
  await (await firstEvent(res)).next()
  controller.abort()
  const started = performance.now()
  const next = await (await openai()).responses.create({ ...ASK, input: 'next' })
  t.equal(next.status, 'incomplete')
  // Its 4 tokens take a hundredth of the 4000's time; waiting behind them, all of it: half divides the two at any speed.
  const ms = performance.now() - started
  t.ok(ms < heldMs / 2, `served at once (one slot: the first request let it go): in ${Math.round(ms)} ms, against about ${Math.round(heldMs)} ms behind the first`)
})
