import OpenAI from 'openai'
import t from 'tap'
import { post, serveTinyModels, sharedServer } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const tiny = sharedServer(() => serveTinyModels(t))

// OpenAI's Responses API (Codex, newer SDK code) through the official client, against the real gateway and
// llama-server on the tiny random-weights model: shapes and counts, not words.

t.test('responses.create, not streamed: a response object with our model name and the output text', async (t) => {
  const { url } = await tiny()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const response = await client.responses.create({ model: 'acme/tiny', input: 'hi', instructions: 'be brief', max_output_tokens: 5 })
  t.equal(response.object, 'response')
  // Cut at max_output_tokens, as OpenAI says it: incomplete, and why.
  t.equal(response.status, 'incomplete')
  t.same(response.incomplete_details, { reason: 'max_output_tokens' })
  t.equal(response.model, 'acme/tiny')
  const message = response.output.find((item) => item.type === 'message')
  t.ok(message, 'a message item in the output')
  // The SDK's output_text joins the message's text parts: the same text the runtime put in the output item.
  const parts = message?.type === 'message' ? message.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('') : null
  t.equal(response.output_text, parts, 'output_text is the message item\'s text')
  t.equal(response.usage?.output_tokens, 5, 'max_output_tokens honoured (ignore_eos from the defaults reached generation)')
})

t.test('responses.create streamed: events in order, ending with response.incomplete at max_output_tokens', async (t) => {
  const { url } = await tiny()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const stream = await client.responses.create({ model: 'acme/tiny', input: [{ role: 'user', content: 'hello' }], max_output_tokens: 6, stream: true })
  const types: string[] = []
  let completed: OpenAI.Responses.Response | null = null
  for await (const event of stream) {
    types.push(event.type)
    if (event.type === 'response.incomplete') completed = event.response
  }
  t.equal(types[0], 'response.created')
  t.equal(types.at(-1), 'response.incomplete')
  t.ok(types.includes('response.output_text.delta'), 'text came as deltas')
  t.equal(completed?.model, 'acme/tiny')
  t.equal(completed?.usage?.output_tokens, 6)
})

t.test('/v1/responses bad input: 400 in OpenAI\'s shape, unknown model 404', async (t) => {
  const { url } = await tiny()
  const cases: Array<[string, unknown, number, RegExp]> = [
    ['no input', { model: 'acme/tiny' }, 400, /input/],
    ['input of the wrong type', { model: 'acme/tiny', input: 5 }, 400, /input/],
    ['an empty input list', { model: 'acme/tiny', input: [] }, 400, /input/],
    ['unknown model', { model: 'acme/nope', input: 'hi' }, 404, /model "acme\/nope" not found/],
  ]
  for (const [what, body, status, message] of cases) {
    const res = await post(`${url}/v1/responses`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error' } }, `${what}: OpenAI's shape`)
  }
})

t.test('/v1/chat/completions: a message without a role is the user\'s', async (t) => {
  const { url } = await tiny()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const withRole = await client.chat.completions.create({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ content: 'hi' }], max_tokens: 2 })
  t.equal(res.status, 200)
  const body = await res.json() as { usage: { prompt_tokens: number }, choices: Array<{ message: { role: string } }> }
  t.equal(body.choices[0]?.message.role, 'assistant')
  t.equal(body.usage.prompt_tokens, withRole.usage?.prompt_tokens, 'the same prompt as with role "user"')
})
