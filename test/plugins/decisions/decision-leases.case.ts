import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveRealisticModels, sseEvents } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

const secret = (name: string): string => `lg-test-${name}-0123456789abcdef`
const as = (name: string): Record<string, string> => ({ authorization: `Bearer ${secret(name)}` })
const ASK = { state: 'The parcel was left at the wrong door.', questions: { late: { type: 'noul', instructions: 'Is the customer owed a refund?' }, team: { type: 'choice', instructions: 'Which team?', criteria: { refunds: null, shipping: null } } } }

t.test('decisions are requests like any other: a key\'s models, its quota, its usage, /metrics; 16 at once beside a streaming chat', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  const key = (name: string, models: string[], limits = {}) => ({ name, hash: hashSecret(secret(name)), scopes: ['infer' as const, 'admin' as const], models, limits, created: new Date().toISOString() })
  await writeKeysFile(keysFile, { keys: [key('ops', ['*']), key('decider', ['acme/openjev'], { tokens_per_day: 400 })] })
  const { url } = await serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/chat': 'qwen25' }, {
    auth: { keys_file: keysFile },
    models: { 'acme/openjev': { options: { num_parallel: 4 } }, 'acme/chat': { options: { num_ctx: 4096 } } },
  })

  t.equal((await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ASK })).status, 401, 'no key, no decision')
  const outside = await post(`${url}/v1/systemone`, { model: 'acme/chat', ...ASK }, as('decider'))
  t.equal(outside.status, 403, 'a model outside the key\'s list')
  t.match(await outside.json(), { error: { code: 403, type: 'permission_error', message: /may not use model "acme\/chat"/ } })
  const first = await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ASK }, as('decider'))
  t.equal(first.status, 200)
  const { usage } = await first.json() as { usage: { input_tokens: number } }
  await until('the decision counted for its key', async () => {
    const body = await (await fetch(`${url}/api/usage`, { headers: as('decider') })).json() as any
    return body.keys[0]?.models[0]?.prompt_tokens === usage.input_tokens
  })
  const mine = await (await fetch(`${url}/api/usage`, { headers: as('decider') })).json() as any
  t.match(mine.keys[0], { key: 'decider', today: { tokens: usage.input_tokens }, models: [{ model: 'acme/openjev', requests: 1, prompt_tokens: usage.input_tokens, generated_tokens: 0 }] }, 'usage: its input tokens, under its key')
  // The day's 400 tokens: each decision here reads about 150, so the third finds the quota spent.
  let refused: Response | null = null
  for (let i = 0; i < 4 && refused === null; i++) {
    const res = await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ASK }, as('decider'))
    if (res.status !== 200) refused = res
    else await res.body?.cancel()
  }
  t.equal(refused?.status, 429, 'past its tokens per day: refused')
  t.ok(Number(refused?.headers.get('retry-after')) >= 1, 'with Retry-After')
  t.match(await refused?.json(), { error: { code: 429, type: 'rate_limit_error', message: /tokens/ } })

  // A chat streams on acme/chat while 16 decisions go to acme/openjev at once: every one is answered.
  const chat = post(`${url}/v1/chat/completions`, { model: 'acme/chat', messages: [{ role: 'user', content: 'Tell me a long story.' }], stream: true, max_tokens: 64 }, as('ops'))
  const decisions = await Promise.all(Array.from({ length: 16 }, async (_, i) => {
    const res = await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ASK, state: `${ASK.state} (ticket ${i})` }, as('ops'))
    return { status: res.status, body: await res.json() as any }
  }))
  t.same(decisions.map((d) => d.status), Array(16).fill(200), '16 decisions at once: all answered')
  t.ok(decisions.every((d) => typeof d.body.answers.late.noul === 'number'), 'each with its answers')
  const events = await sseEvents(await chat)
  t.equal(events.at(-1), '[DONE]', 'the chat beside them streamed to its end')

  const metrics = await (await fetch(`${url}/metrics`, { headers: as('ops') })).text()
  t.match(metrics, /llamagate_requests_total\{surface="decisions",model="acme\/openjev",status="200"\} (\d+)/, '/metrics counts them by surface and model')
  t.match(metrics, /llamagate_prompt_tokens_total\{model="acme\/openjev"\} [1-9]/, 'and their prompt tokens')
})

t.test('an upstream\'s decision model: a front llamagate asks the back one, its answers as they came', async (t) => {
  const back = await serveRealisticModels(t, { 'acme/openjev': 'openjev' })
  const front = await serveRealisticModels(t, {}, { upstreams: [{ name: 'back', url: back.url, kind: 'llamagate', prefix: 'back/' }] })
  await until('the back llamagate healthy', () => front.app.upstreams.stateOf('back')?.healthy === true)
  const direct = await (await post(`${back.url}/v1/systemone`, { model: 'acme/openjev', ...ASK })).json() as any
  const res = await post(`${front.url}/v1/systemone`, { model: 'back/acme/openjev', ...ASK })
  t.equal(res.status, 200)
  const through = await res.json() as any
  t.equal(through.model, 'back/acme/openjev', 'under the name the client asked for')
  t.same(through.answers, direct.answers, 'the back\'s answers, as they came')
  const refused = await post(`${front.url}/v1/systemone`, { model: 'back/acme/openjev', state: 'x', questions: {} })
  t.equal(refused.status, 422, 'the back\'s refusal too')
  const decided = await (await post(`${front.url}/v1/decisions`, { model: 'back/acme/openjev', input: 'x', questions: [{ type: 'predicate', instructions: 'Late?' }] })).json() as any
  t.match(decided, { model: 'back/acme/openjev', answers: [{ type: 'predicate', probability: Number }] }, '/v1/decisions likewise')
})
