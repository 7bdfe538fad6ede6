// Every restore judged once, on the real llama-server (plugins/prompt-cache/restore-checks.ts): reused by its
// follow-up even when its model is swapped out the moment that follow-up ends, judged at a streamed follow-up's first
// token, missed when another conversation takes its slot, unused when its model stops before any request; and the
// metrics say each, so that restored = reused + miss + unused.
import t, { type Test } from 'tap'
import { post, serveTinyModels, sharedServer } from '../../helpers/inference.js'
import { prefix } from '../../helpers/prompt-cache-watch.js'
import { streamText } from '../../helpers/stream-text.js'
import { until } from '../../helpers/until.js'

type Outcome = 'reused' | 'missed' | 'unused'

/**
 * One gateway for the file, room for one model (another model's request swaps the loaded one out at once), each
 * restore's verdict listed by model. Slots of 2,048 tokens (the trained context) leave room for long answers; acme/long
 * has one.
 */
const gateway = sharedServer(async () => {
  const server = await serveTinyModels(t, ['acme/swap', 'acme/other', 'acme/long'], {
    prompt_cache: { min_tokens: 32 },
    limits: { max_loaded_models: 1, min_residency: '0s' },
    models: { 'acme/swap': { options: { num_ctx: 2048 } }, 'acme/long': { options: { num_parallel: 1, num_ctx: 2048 } } },
  })
  const verdicts: Array<{ model: string, outcome: Outcome, detail: number | string }> = []
  const restored: string[] = []
  const { events } = server.app.promptCache!
  events.on('restored', (model) => restored.push(model))
  events.on('reused', (model, tokens) => verdicts.push({ model, outcome: 'reused', detail: tokens }))
  events.on('missed', (model, reason) => verdicts.push({ model, outcome: 'missed', detail: reason }))
  events.on('unused', (model, tokens) => verdicts.push({ model, outcome: 'unused', detail: tokens }))
  const of = (model: string): typeof verdicts => verdicts.filter((v) => v.model === model)
  return { ...server, of, restored: (model: string) => restored.filter((m) => m === model).length }
})

async function turn (url: string, model: string, content: string, extra: object = {}): Promise<{ status: number, cached: number, prompt: number }> {
  const res = await post(`${url}/v1/chat/completions`, { model, messages: [{ role: 'user', content }], max_tokens: 2, temperature: 0, ...extra })
  const body = await res.json() as { usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } }
  return { status: res.status, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? -1, prompt: body.usage?.prompt_tokens ?? -1 }
}

/** A conversation's first turn, then its model stopped: its slot saved, to be restored at the next load. */
async function savedConversation (t: Test, url: string, model: string, seed: number): Promise<number> {
  const first = await turn(url, model, prefix(seed))
  t.equal(first.status, 200)
  await post(`${url}/api/stop`, { model })
  return first.prompt
}

/** The counter's value for a model and action in the /metrics text, 0 when absent. */
async function metric (url: string, model: string, action: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`llamagate_prompt_caches_total{model="${model}",action="${action}"}`))
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

t.test('a follow-up that reused its restore counts reused, though another model swaps its model out as it ends', async (t) => {
  const { url, of, restored } = await gateway()
  const first = await savedConversation(t, url, 'acme/swap', 41)
  // A long answer, not streamed (no first token to judge it by): the other model's request comes while it runs and
  // takes the room the moment it ends, as the runs did.
  const followUp = turn(url, 'acme/swap', `${prefix(41)} and more`, { max_tokens: 300 })
  await until('acme/swap restored', () => restored('acme/swap') === 1)
  const other = turn(url, 'acme/other', prefix(42))
  const [again, swapped] = await Promise.all([followUp, other])
  t.equal(again.status + swapped.status, 400)
  t.ok(again.cached >= first - 20, `the follow-up reused ${again.cached} of its ${again.prompt} prompt tokens`)
  await until('the restore judged', () => of('acme/swap').length > 0)
  t.match(of('acme/swap'), [{ outcome: 'reused' }], 'reused, once')
  t.ok((of('acme/swap')[0]!.detail as number) >= first - 20, 'with the tokens it did not evaluate again')
  t.equal(await metric(url, 'acme/swap', 'reused'), 1)
  t.equal(await metric(url, 'acme/swap', 'unused'), 0)
})

t.test('a streamed follow-up is judged at its first token, while it still runs', async (t) => {
  const { app, url, of } = await gateway()
  const first = await savedConversation(t, url, 'acme/long', 43)
  const stop = new AbortController()
  t.teardown(() => stop.abort())
  // Ends when the 2,048-token context fills (ignore_eos): seconds, against the milliseconds of a judgement.
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: [{ role: 'user', content: `${prefix(43)} go on` }], max_tokens: 1800, stream: true }, {}, stop.signal)
  const stream = streamText(res)
  await stream.readUntil('its first token', (text) => text.includes('"content"'))
  await until('the restore judged', () => of('acme/long').length > 0)
  t.equal(app.leases.requestCounts().get('acme/long')?.inFlight, 1, 'judged while the request ran')
  t.match(of('acme/long'), [{ outcome: 'reused' }])
  t.ok((of('acme/long')[0]!.detail as number) >= first - 20, `reused ${String(of('acme/long')[0]!.detail)} tokens`)
  stop.abort()
  await stream.rest().catch(() => {})
  await post(`${url}/api/stop`, { model: 'acme/long' })
  t.equal(of('acme/long').length, 1, 'judged once: its end and the stop add nothing')
})

t.test('another conversation takes the restored slot: missed, and the save is kept', async (t) => {
  const { app, url, of } = await gateway()
  // acme/long's one slot gets the last test's conversation back; another one takes it.
  const before = of('acme/long').length
  const saves = app.promptCache!.list().filter((e) => e.model === 'acme/long').length
  t.equal((await turn(url, 'acme/long', prefix(45))).status, 200)
  await until('the restore judged', () => of('acme/long').length > before)
  t.match(of('acme/long').slice(before), [{ outcome: 'missed', detail: /another conversation took the slot/ }])
  t.equal(app.promptCache!.list().filter((e) => e.model === 'acme/long').length, saves, 'the save says nothing wrong of itself: kept')
  t.equal(await metric(url, 'acme/long', 'miss'), 1)
})

t.test('a model stopped before any request took its restore: unused', async (t) => {
  const { url, of, restored } = await gateway()
  // acme/other was saved when acme/long took its room; loaded with nothing to generate (Ollama's load form): restored,
  // then stopped.
  t.equal((await post(`${url}/api/generate`, { model: 'acme/other', prompt: '' })).status, 200)
  t.ok(restored('acme/other') > 0, 'restored')
  await post(`${url}/api/stop`, { model: 'acme/other' })
  await until('the restores judged', () => of('acme/other').length === restored('acme/other'))
  t.ok(of('acme/other').every((v) => v.outcome === 'unused' && (v.detail as number) > 32), 'each unused, with the tokens it restored')
  t.equal(await metric(url, 'acme/other', 'unused'), restored('acme/other'))
})

t.test('every restore judged: restored = reused + miss + unused, per model', async (t) => {
  const { url } = await gateway()
  for (const model of ['acme/swap', 'acme/other', 'acme/long']) {
    const judged = await metric(url, model, 'reused') + await metric(url, model, 'miss') + await metric(url, model, 'unused')
    t.equal(judged, await metric(url, model, 'restored'), model)
  }
})
