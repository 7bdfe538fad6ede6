import t, { type Test } from 'tap'
import { ndjsonEvents, post, serveTinyModels, sharedServer, sseEvents } from '../../helpers/inference.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const tiny = sharedServer(() => serveTinyModels(t))

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const STATS = ['total_duration', 'load_duration', 'prompt_eval_count', 'prompt_eval_duration', 'eval_count', 'eval_duration']

function checkStats (t: Test, event: Record<string, unknown>, expectTokens: number): void {
  for (const key of STATS) t.type(event[key], 'number', `${key} is a number`)
  t.equal(event.eval_count, expectTokens, 'eval_count is the number of tokens generated')
  t.ok((event.prompt_eval_count as number) > 0, 'the prompt was counted')
  t.ok((event.total_duration as number) >= (event.eval_duration as number), 'total covers generation')
  t.match(event.done_reason, /^(stop|length)$/)
}

t.test('/api/chat streams SSE events of the documented shape', async (t) => {
  const { url } = await tiny()
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hello' }], options: { max_tokens: 8, seed: 42 } })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const events = await sseEvents(res) as Array<Record<string, any>>
  const last = events.at(-1)!
  const fragments = events.slice(0, -1)
  t.ok(fragments.length > 0, 'at least one fragment')
  for (const e of fragments) {
    t.same(Object.keys(e).sort(), ['created_at', 'done', 'message', 'model'])
    t.equal(e.model, 'acme/tiny')
    t.equal(e.done, false)
    t.match(e.created_at, ISO_MS)
    t.equal(e.message.role, 'assistant')
    t.type(e.message.content, 'string')
  }
  t.equal(last.done, true)
  t.equal(last.model, 'acme/tiny')
  t.match(last.created_at, ISO_MS)
  t.notOk('message' in last, 'the SSE final event has no message (rest-interface 4.1)')
  t.equal(last.done_reason, 'length')
  checkStats(t, last, 8)
})

t.test('/api/chat answers NDJSON with Ollama final shape when asked', async (t) => {
  const { url } = await tiny()
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 5 } }, { accept: 'application/x-ndjson' })
  t.match(res.headers.get('content-type'), /^application\/x-ndjson/)
  const events = await ndjsonEvents(res) as Array<Record<string, any>>
  const last = events.at(-1)!
  t.equal(last.done, true)
  t.same(last.message, { role: 'assistant', content: '' }, 'Ollama clients get an empty message on the final chunk')
  checkStats(t, last, 5)
})

t.test('/api/chat with stream false answers once; multi-turn conversations work', async (t) => {
  const { url } = await tiny()
  const first = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'one' }], options: { max_tokens: 6, seed: 1 } })
  t.equal(first.status, 200)
  t.match(first.headers.get('content-type'), /application\/json/)
  const answer = await first.json() as Record<string, any>
  t.equal(answer.model, 'acme/tiny')
  t.equal(answer.done, true)
  t.equal(answer.message.role, 'assistant')
  t.ok(answer.message.content.length > 0)
  checkStats(t, answer, 6)
  const second = await post(`${url}/api/chat`, {
    model: 'acme/tiny', stream: false, options: { max_tokens: 6, seed: 1 },
    messages: [{ role: 'user', content: 'one' }, answer.message, { role: 'user', content: 'two' }],
  })
  const reply = await second.json() as Record<string, any>
  t.equal(second.status, 200)
  t.ok(reply.prompt_eval_count > answer.prompt_eval_count, 'the longer history was all sent')
})

t.test('/api/generate streams response fragments and a final event', async (t) => {
  const { url } = await tiny()
  for (const raw of [false, true]) {
    const res = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'Once upon', raw, options: { max_tokens: 7 } })
    t.equal(res.status, 200)
    const events = await sseEvents(res) as Array<Record<string, any>>
    const last = events.at(-1)!
    for (const e of events.slice(0, -1)) {
      t.same(Object.keys(e).sort(), ['created_at', 'done', 'model', 'response'])
      t.equal(e.done, false)
    }
    t.equal(last.response, '')
    t.equal(last.done, true)
    checkStats(t, last, 7)
  }
  const whole = await (await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'Once upon', stream: false, options: { max_tokens: 4 } })).json() as Record<string, any>
  t.equal(whole.done, true)
  t.type(whole.response, 'string')
  t.ok(whole.response.length > 0)
  checkStats(t, whole, 4)
})

t.test('empty messages / prompt load the model; with keep_alive 0 they unload it', async (t) => {
  const { url } = await tiny()
  const load = await (await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [] })).json() as Record<string, any>
  t.equal(load.done_reason, 'load')
  let ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<Record<string, any>> }
  t.equal(ps.models.length, 1)
  t.equal(ps.models[0]!.state, 'loaded')
  const unload = await (await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: '', keep_alive: 0 })).json() as Record<string, any>
  t.equal(unload.done_reason, 'unload')
  ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<Record<string, any>> }
  t.same(ps.models, [])
})

t.test('format: a JSON schema constrains the answer to it (the runtime\'s json_schema)', async (t) => {
  // Through /completion (raw) only: the tiny model's home-made template is no chat format llama-server knows,
  // so what a chat with `format` does on it is llama-server's business, not the gateway's. The chat path is
  // checked on a real template (tools-and-format.case.ts), and a runtime's refusal reaching the client with
  // its words on the stream relays (openai-api/stream-relay.case.ts, anthropic-api/messages.case.ts).
  const { url } = await tiny()
  const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false }
  const generated = await post(`${url}/api/generate`, { model: 'acme/tiny', stream: false, raw: true, format: schema, prompt: 'x', options: { max_tokens: 64, ignore_eos: false } })
  t.equal(generated.status, 200)
  t.type(JSON.parse((await generated.json() as any).response).ok, 'boolean', 'even a random model answers in the schema')
  const json = await post(`${url}/api/generate`, { model: 'acme/tiny', stream: false, raw: true, format: 'json', prompt: 'x', options: { max_tokens: 64, ignore_eos: false } })
  // A random model may ramble inside a string until max_tokens: only the start is certain.
  t.match((await json.json() as any).response, /^\s*\{/, 'format "json" constrains the answer to a JSON object')
})

t.test('streamed fragments never split a character: they add up to the unstreamed answer', async (t) => {
  // The random-weights model emits byte tokens that form multi-byte characters over several tokens; a
  // character split across events would turn into two U+FFFD halves in the stream but not in the whole.
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 1024 } })
  const body = { model: 'acme/tiny', messages: [{ role: 'user', content: 'same' }], options: { max_tokens: 400, seed: 7, temperature: 1.5 } }
  const whole = await (await post(`${url}/api/chat`, { ...body, stream: false })).json() as Record<string, any>
  const events = await sseEvents(await post(`${url}/api/chat`, body)) as Array<Record<string, any>>
  const streamed = events.filter((e) => !e.done).map((e) => e.message.content).join('')
  t.equal(streamed, whole.message.content)
  t.match(whole.message.content, /[^\x00-\x7f\ufffd]/, 'the answer holds multi-byte characters, so the check means something')
})

t.test('a request the runtime refuses (a prompt longer than the context): 400 with its words, in the native shape', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 64, num_parallel: 1 } })
  for (const stream of [false, true]) {
    const refused = await post(`${url}/api/chat`, { model: 'acme/tiny', stream, messages: [{ role: 'user', content: 'word '.repeat(3000) }] })
    t.equal(refused.status, 400, `stream ${stream}: 400, before any event`)
    const body = await refused.json() as Record<string, unknown>
    t.same(Object.keys(body), ['error'], 'the native shape')
    t.match(body.error, /context|exceed/i, 'llama-server\'s own reason')
  }
  const next = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'x' }], options: { max_tokens: 2 } })
  t.equal(next.status, 200, 'the next request is served')
})
