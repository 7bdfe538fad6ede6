import t from 'tap'
import { ResponseBuilder } from '../../plugins/openai-api/response-builder.js'
import { openAiSpec } from '../helpers/api-specs.js'
import { post } from '../helpers/inference.js'
import { checkChunkStream, checkResponseStream, fits, sseOf } from '../helpers/spec-streams.js'
import { conformanceServer as server } from './conformance-server.js'

type Json = Record<string, any>

// What /v1 answers, judged by OpenAI's OpenAPI document (test/fixtures/specs/openai, pinned): whole answers, every
// chunk and event of a stream, errors. Extra fields pass; a missing required field, a wrong type, a value outside an
// enum, a stream out of order fail. The models are tiny and random: the words are noise, the shapes are the test.

const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Lima'] } }, required: ['city'], additionalProperties: false } },
}
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
const CHAT = openAiSpec.response('/chat/completions', 'post', '200')
const CHUNK = openAiSpec.response('/chat/completions', 'post', '200', 'text/event-stream')
const ERROR = openAiSpec.schema('ErrorResponse')

t.test('GET /v1/models and /v1/models/{model}', async (t) => {
  const { url } = await server()
  fits(t, openAiSpec.response('/models', 'get', '200'), await (await fetch(`${url}/v1/models`)).json(), 'the list')
  fits(t, openAiSpec.response('/models/{model}', 'get', '200'), await (await fetch(`${url}/v1/models/acme/qwen`)).json(), 'a model')
  const missing = await fetch(`${url}/v1/models/acme/nope`)
  t.equal(missing.status, 404)
  fits(t, ERROR, await missing.json(), 'an unknown model\'s 404')
})

t.test('POST /v1/chat/completions: whole, streamed with and without usage', async (t) => {
  const { url } = await server()
  const body = { model: 'acme/qwen', max_tokens: 6, messages }
  fits(t, CHAT, await (await post(`${url}/v1/chat/completions`, body)).json(), 'a whole completion')
  checkChunkStream(t, await sseOf(await post(`${url}/v1/chat/completions`, { ...body, stream: true })), CHUNK, 'streamed', { includeUsage: false })
  checkChunkStream(t, await sseOf(await post(`${url}/v1/chat/completions`, { ...body, stream: true, stream_options: { include_usage: true } })), CHUNK, 'streamed with usage', { includeUsage: true })
  // A stream long enough to cross a second: llama-server stamps each chunk with its own.
  const long = checkChunkStream(t, await sseOf(await post(`${url}/v1/chat/completions`, { ...body, max_tokens: 400, options: { ignore_eos: true }, stream: true })), CHUNK, 'a long stream', { includeUsage: false })
  t.ok(long.length > 100, `${long.length} chunks`)
})

t.test('POST /v1/chat/completions with tools: the model\'s own call, a forced call, a named one; whole and streamed', async (t) => {
  const { url } = await server()
  const cases = [
    ['auto (the caller fixture calls on its own)', { model: 'acme/caller', tools: [WEATHER] }],
    ['required', { model: 'acme/qwen', tools: [WEATHER], tool_choice: 'required' }],
    ['a named function', { model: 'acme/qwen', tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_weather' } } }],
  ] as const
  // A forced call ends where its grammar does: the arguments' schema closed (no other properties), its whitespace
  // bounded, well within the tokens given, whatever a random model samples.
  for (const [what, extra] of cases) {
    const whole = await (await post(`${url}/v1/chat/completions`, { max_tokens: 400, messages, ...extra })).json() as Json
    fits(t, CHAT, whole, `${what}: whole`)
    t.equal(whole.choices[0].finish_reason, 'tool_calls', `${what}: a call`)
    const events = await sseOf(await post(`${url}/v1/chat/completions`, { max_tokens: 400, messages, ...extra, stream: true, stream_options: { include_usage: true } }))
    const chunks = checkChunkStream(t, events, CHUNK, `${what}: streamed`, { includeUsage: true })
    t.ok(chunks.some((c) => c.choices[0]?.delta?.tool_calls !== undefined), `${what}: streamed as tool call deltas`)
  }
})

t.test('POST /v1/chat/completions errors', async (t) => {
  const { url } = await server()
  for (const [status, body] of [[400, { model: 'acme/qwen', messages: 'no' }], [404, { model: 'acme/nope', messages }], [400, { model: 'acme/bert', messages }]] as const) {
    const res = await post(`${url}/v1/chat/completions`, body)
    t.equal(res.status, status)
    fits(t, ERROR, await res.json(), `a ${status}`)
  }
})

t.test('POST /v1/completions: whole, streamed with and without usage', async (t) => {
  const { url } = await server()
  const body = { model: 'acme/qwen', max_tokens: 6, prompt: 'Once upon a time' }
  const completion = openAiSpec.response('/completions', 'post', '200')
  fits(t, completion, await (await post(`${url}/v1/completions`, body)).json(), 'a whole completion')
  // The document's completions stream is the same object, chunk by chunk, `finish_reason` null until the last (api-specs.ts).
  const chunk = openAiSpec.completionChunk()
  checkChunkStream(t, await sseOf(await post(`${url}/v1/completions`, { ...body, stream: true })), chunk, 'streamed', { includeUsage: false })
  checkChunkStream(t, await sseOf(await post(`${url}/v1/completions`, { ...body, stream: true, stream_options: { include_usage: true } })), chunk, 'streamed with usage', { includeUsage: true })
})

t.test('POST /v1/embeddings: float and base64', async (t) => {
  const { url } = await server()
  const embeddings = openAiSpec.response('/embeddings', 'post', '200')
  fits(t, embeddings, await (await post(`${url}/v1/embeddings`, { model: 'acme/bert', input: ['a cat', 'a dog'] })).json(), 'float')
  // The document types `embedding` as numbers only; with base64 OpenAI sends (and its SDKs decode) a string of
  // little-endian float32s: decoded, it must be the numbers the document has.
  const answer = await (await post(`${url}/v1/embeddings`, { model: 'acme/bert', input: ['a cat', 'a dog'], encoding_format: 'base64' })).json() as Json
  for (const item of answer.data) {
    t.type(item.embedding, 'string')
    const bytes = Buffer.from(item.embedding, 'base64')
    item.embedding = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4))
  }
  fits(t, embeddings, answer, 'base64, decoded')
})

t.test('POST /v1/responses: whole and streamed, text, function tools, a forced call; GET and DELETE', async (t) => {
  const { url } = await server()
  const response = openAiSpec.response('/responses', 'post', '200')
  const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters }]
  const cases = [
    ['text', { model: 'acme/qwen', input: 'hi', max_output_tokens: 8 }],
    ['text cut at its limit', { model: 'acme/qwen', input: 'hi', max_output_tokens: 8, options: { ignore_eos: true } }],
    ['function tools (the caller calls)', { model: 'acme/caller', input: 'Weather in Paris?', tools, max_output_tokens: 200 }],
    ['a forced call', { model: 'acme/qwen', input: 'Weather in Paris?', tools, tool_choice: 'required', max_output_tokens: 200 }],
  ] as const
  for (const [what, body] of cases) {
    const whole = await (await post(`${url}/v1/responses`, body)).json() as Json
    fits(t, response, whole, `${what}: whole`)
    const events = checkResponseStream(t, await sseOf(await post(`${url}/v1/responses`, { ...body, stream: true })), `${what}: streamed`)
    fits(t, response, events.at(-1)!.response, `${what}: the streamed response`)
    const got = await fetch(`${url}/v1/responses/${whole.id}`)
    fits(t, openAiSpec.response('/responses/{response_id}', 'get', '200'), await got.json(), `${what}: GET`)
  }
  const stored = await (await post(`${url}/v1/responses`, cases[0][1])).json() as Json
  const deleted = await fetch(`${url}/v1/responses/${stored.id}`, { method: 'DELETE' })
  // The document gives DELETE's 200 no body; OpenAI's API and SDKs answer and read `{id, object, deleted}`.
  t.match(await deleted.json(), { id: stored.id, object: 'response', deleted: true })
  const gone = await fetch(`${url}/v1/responses/${stored.id}`)
  t.equal(gone.status, 404)
  fits(t, ERROR, await gone.json(), 'a deleted response: 404')
  const previous = await post(`${url}/v1/responses`, { ...cases[0][1], previous_response_id: stored.id })
  t.equal(previous.status, 400)
  fits(t, ERROR, await previous.json(), 'an unknown previous_response_id: 400')
})

t.test('a Responses stream that fails: the error event and response.failed as the document types them', async (t) => {
  // The builder writes what a stream that fails once open ends with (responses-state.case.ts stops a real one).
  for (const error of [{ code: 'model_stopped', message: 'model "acme/qwen" was stopped', statusCode: 503 }, { code: 'context_length_exceeded', message: 'too long', statusCode: 400 }, { code: null, message: 'broke', statusCode: 500 }]) {
    const builder = new ResponseBuilder({ created_at: 1, model: 'acme/qwen', tools: [], tool_choice: 'auto', parallel_tool_calls: true, metadata: {}, text: { format: { type: 'text' } }, error: null, incomplete_details: null, instructions: null, temperature: null, top_p: null })
    const events = [...builder.start(), ...builder.add({ choices: [{ delta: { content: 'partial' } }] }), ...builder.fail(error)]
    checkResponseStream(t, events.map((data) => ({ name: data.type, data })), `failed with ${error.code}`)
    t.match(events.at(-1), { type: 'response.failed', response: { status: 'failed', error: { message: new RegExp(error.message) } } })
  }
})
