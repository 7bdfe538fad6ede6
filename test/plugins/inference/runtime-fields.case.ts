// Body fields of llama-server's that step around the gateway: refused by name before any
// slot is taken, on every surface that hands a body to llama-server; fields no surface lists are not sent.
import t from 'tap'
import { ANTHROPIC_FIELDS, MAX_PROBS, OPENAI_CHAT_FIELDS, OPENAI_COMPLETION_FIELDS, runtimeFields } from '../../../plugins/inference/runtime-fields.js'
import { serveTinyModels } from '../../helpers/inference.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'

const MODEL = 'acme/tiny'
const MESSAGES = [{ role: 'user', content: 'hi' }]

async function post (url: string, body: unknown): Promise<{ status: number, json: any, ms: number }> {
  const started = Date.now()
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, json: await res.json(), ms: Date.now() - started }
}

t.test('n_cmpl, id_slot, lora, response_fields, n_predict and too many probabilities: a 400 naming the field, no slot taken', async (t) => {
  const { url } = await serveTinyModels(t, [MODEL], { default_options: { num_parallel: 2 } })
  const chat = { model: MODEL, messages: MESSAGES, max_tokens: 4 }
  // Before: `{"n_cmpl":4,"max_tokens":4000,"ignore_eos":true}` took every slot while /api/ps said one.
  const attacks: Array<[string, string, Record<string, unknown>, RegExp]> = [
    ['/v1/chat/completions', 'n_cmpl', { ...chat, n_cmpl: 2, max_tokens: 400, stream: true }, /"n_cmpl" is not accepted here: it asks for several completions at once/],
    ['/v1/chat/completions', 'id_slot', { ...chat, id_slot: 1 }, /"id_slot" is not accepted here: it picks a runtime slot/],
    ['/v1/chat/completions', 'lora', { ...chat, lora: [{ id: 0, scale: 1 }] }, /"lora" is not accepted here/],
    ['/v1/chat/completions', 'response_fields', { ...chat, response_fields: ['content'] }, /"response_fields" is not accepted here: it filters the answer/],
    ['/v1/chat/completions', 'n_predict', { ...chat, n_predict: 100_000 }, /"n_predict" is not accepted here: it is llama-server's own name: send max_tokens/],
    ['/v1/chat/completions', 'top_logprobs', { ...chat, logprobs: true, top_logprobs: MAX_PROBS + 1 }, new RegExp(`"top_logprobs" is not accepted here: it asks for ${MAX_PROBS + 1} alternatives per token: at most ${MAX_PROBS}`)],
    ['/v1/chat/completions', 'n_probs', { ...chat, n_probs: 1000 }, /"n_probs" is not accepted here/],
    ['/v1/completions', 'logprobs', { model: MODEL, prompt: 'hi', max_tokens: 4, logprobs: 100 }, /"logprobs" is not accepted here/],
    ['/v1/completions', 'n_cmpl', { model: MODEL, prompt: 'hi', max_tokens: 4, n_cmpl: 2 }, /"n_cmpl" is not accepted here/],
  ]
  const usual = await usualMs(() => post(`${url}/v1/chat/completions`, chat))
  // All at once, a normal client's request among them.
  const [normal, ...answers] = await Promise.all([post(`${url}/v1/chat/completions`, chat), ...attacks.map(([path, , body]) => post(`${url}${path}`, body))])
  t.equal(normal!.status, 200, 'the normal request among them is answered')
  withinUsualTime(t, 'the normal request', normal!.ms, usual)
  for (const [i, [path, field, , words]] of attacks.entries()) {
    const res = answers[i]!
    t.equal(res.status, 400, `${path} ${field}: 400`)
    t.match(res.json, { error: { message: words, type: 'invalid_request_error' } }, `${path} ${field}: OpenAI's error shape, naming the field`)
  }
  const anthropic = await post(`${url}/v1/messages`, { model: MODEL, messages: MESSAGES, max_tokens: 4, n_cmpl: 2 })
  t.equal(anthropic.status, 400)
  t.match(anthropic.json, { type: 'error', error: { type: 'invalid_request_error', message: /"n_cmpl" is not accepted here/ } }, 'Anthropic\'s shape on /v1/messages')

  // What is within bounds still passes: a single completion, the default slot, a few probabilities.
  const fine = await post(`${url}/v1/chat/completions`, { ...chat, n_cmpl: 1, id_slot: -1, logprobs: true, top_logprobs: 2 })
  t.equal(fine.status, 200, 'within bounds: answered')
  t.equal(fine.json.choices.length, 1)
  t.equal(fine.json.choices[0].logprobs.content[0].top_logprobs.length, 2, 'top_logprobs 2 reached llama-server')
  t.equal(fine.json.usage.completion_tokens, 4, 'usage counts what was generated')

  const ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<{ name: string, active_requests?: number, queued_requests?: number }> }
  t.match(ps.models.find((m) => m.name === MODEL), { active_requests: 0, queued_requests: 0 }, 'no slot held after the refusals')
})

t.test('only the fields a surface lists are sent: the others are left out, whatever their value', async (t) => {
  const body = { model: MODEL, messages: MESSAGES, temperature: 0.5, top_k: 3, sse_ping_interval: 0.001, chat_parser: 'x', made_up: 1, __proto__x: 2 }
  t.same(runtimeFields(body, OPENAI_CHAT_FIELDS), { model: MODEL, messages: MESSAGES, temperature: 0.5, top_k: 3 }, 'chat: its fields and llama-server\'s sampling')
  t.same(runtimeFields({ model: MODEL, prompt: 'p', echo: true, messages: MESSAGES }, OPENAI_COMPLETION_FIELDS), { model: MODEL, prompt: 'p', echo: true }, 'text completions: no messages')
  t.same(runtimeFields({ model: MODEL, messages: MESSAGES, system: 's', stop_sequences: ['x'], prompt: 'p' }, ANTHROPIC_FIELDS), { model: MODEL, messages: MESSAGES, system: 's', stop_sequences: ['x'] }, 'Messages: its own fields')
  t.throws(() => runtimeFields({ id_slot: 0 }, OPENAI_CHAT_FIELDS), { statusCode: 400, code: 'unsupported_parameter' }, 'a refused field is refused whether listed or not')
})
