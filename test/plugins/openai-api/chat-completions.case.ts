import OpenAI from 'openai'
import t from 'tap'
import { post, serveTinyModels, sharedServer, sseEvents } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const tiny = sharedServer(() => serveTinyModels(t))

t.test('/v1/chat/completions, not streamed, in OpenAI shape', async (t) => {
  const { url } = await tiny()
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })
  t.equal(res.status, 200)
  const body = await res.json() as any
  t.match(body.id, /^chatcmpl-/)
  t.equal(body.object, 'chat.completion')
  t.type(body.created, 'number')
  t.equal(body.model, 'acme/tiny')
  t.equal(body.choices.length, 1)
  t.equal(body.choices[0].index, 0)
  t.equal(body.choices[0].message.role, 'assistant')
  t.type(body.choices[0].message.content, 'string')
  t.equal(body.choices[0].finish_reason, 'length')
  t.equal(body.usage.completion_tokens, 5)
  t.equal(body.usage.total_tokens, body.usage.prompt_tokens + 5)
})

t.test('/v1/chat/completions streamed: chunks, usage on request, [DONE]', async (t) => {
  const { url } = await tiny()
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }], max_tokens: 6 })
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const events = await sseEvents(res) as any[]
  t.equal(events.at(-1), '[DONE]')
  const chunks = events.slice(0, -1)
  const ids = new Set(chunks.map((c) => c.id))
  t.equal(ids.size, 1, 'one id for the whole stream')
  for (const c of chunks) {
    t.equal(c.object, 'chat.completion.chunk')
    t.equal(c.model, 'acme/tiny')
  }
  const finish = chunks.find((c) => c.choices?.[0]?.finish_reason)
  t.equal(finish.choices[0].finish_reason, 'length')
  const usage = chunks.at(-1)
  t.same(usage.choices, [], 'the usage chunk has no choices')
  t.equal(usage.usage.completion_tokens, 6)
})

t.test('top-level OpenAI fields win over options; options are honoured otherwise', async (t) => {
  const { url } = await tiny()
  const a = await (await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 3, options: { max_tokens: 9 } })).json() as any
  t.equal(a.usage.completion_tokens, 3)
  const b = await (await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], options: { max_tokens: 4 } })).json() as any
  t.equal(b.usage.completion_tokens, 4)
  const c = await (await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 2 })).json() as any
  t.equal(c.usage.completion_tokens, 2)
})

t.test('/v1/completions answers text completions', async (t) => {
  const { url } = await tiny()
  const body = await (await post(`${url}/v1/completions`, { model: 'acme/tiny', prompt: 'abc', max_tokens: 4 })).json() as any
  t.equal(body.object, 'text_completion')
  t.type(body.choices[0].text, 'string')
  t.equal(body.usage.completion_tokens, 4)
})

t.test('the official openai SDK works against /v1', async (t) => {
  const { url } = await tiny()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'anything' })
  // Greedy (temperature 0): the streamed answer must be the same text as the whole one.
  const request = { model: 'acme/tiny', messages: [{ role: 'user' as const, content: 'hello' }], max_tokens: 5, temperature: 0 }
  const completion = await client.chat.completions.create(request)
  t.equal(completion.choices[0]!.message.role, 'assistant')
  t.equal(completion.usage?.completion_tokens, 5)
  const stream = await client.chat.completions.create({ ...request, stream: true })
  let text = ''
  let finish: string | null = null
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? ''
    finish = chunk.choices[0]?.finish_reason ?? finish
  }
  t.equal(finish, 'length')
  t.equal(text, completion.choices[0]!.message.content, 'the deltas make the same answer as the whole completion')
  const models = await client.models.list()
  t.ok(models.data.some((m) => m.id === 'acme/tiny'), 'models.list includes the model')
  const missing = await t.rejects(client.chat.completions.create({ model: 'acme/missing', messages: [{ role: 'user', content: 'x' }] }))
  t.equal((missing as any).status, 404)
})
