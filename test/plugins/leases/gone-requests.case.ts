// Work nobody waits for stops: requests handed on early wait in llama-server's own queue, and when their clients
// leave while other slots stream, llama-server drops them (runtimes/build/patches/0011: its wait for a result used
// to restart at every token any slot produced, so it never looked at the closed connection) and never evaluates
// their prompts. Read from llama-server's own metrics.
import t from 'tap'
import { firstEvent, importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

const MODEL = 'acme/pair'
const GONE = 20

t.test('22 streams on a 2-slot model, 20 clients gone: llama-server\'s queue empties while the other two stream, and no gone prompt is evaluated', async (t) => {
  const { app, url } = await serveTinyModels(t, [], {
    limits: { queue_length: 32 },
    default_options: { num_ctx: 4096, num_parallel: 1 },
    // Two slots of 16k context each: a holder's answer streams for as long as the test needs.
    models: { [MODEL]: { options: { num_ctx: 32_768, num_parallel: 2 } } },
  })
  await importLongContextModel(t, app, MODEL)
  const counts = (): { inFlight: number, queued: number } => app.scheduler.requestCounts().get(MODEL) ?? { inFlight: 0, queued: 0 }
  const metric = async (name: string): Promise<number> => {
    const runtime = app.scheduler.loadedRuntimes().find((r) => r.model === MODEL)!
    const text = await runtime.endpoint.metricsText(AbortSignal.timeout(10_000))
    const value = new RegExp(`^llamacpp:${name} (\\S+)$`, 'm').exec(text)?.[1]
    if (value === undefined) throw new Error(`llama-server's metrics have no llamacpp:${name}`)
    return Number(value)
  }
  const stream = (content: string, maxTokens: number, signal?: AbortSignal): Promise<Response> =>
    post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content }] }, {}, signal)

  const holders = await Promise.all(['hold one', 'hold two'].map(async (content) => {
    const stop = new AbortController()
    t.teardown(() => stop.abort())
    const res = await stream(content, 32_000, stop.signal)
    t.equal(res.status, 200)
    return { stop, answer: await firstEvent(res) }
  }))
  await until('both slots streaming', () => counts().inFlight === 2)

  // Prompts of a few hundred tokens each, no two alike: none could be read from another's cache.
  const words = (i: number): string => Array.from({ length: 120 }, (_, w) => `word${i}x${w}`).join(' ')
  const gone = Array.from({ length: GONE }, (_, i) => {
    const leave = new AbortController()
    const res = stream(`request ${i}: ${words(i)}`, 8, leave.signal)
    res.catch(() => {})
    return { leave, res }
  })
  // One at a time is handed on early (the next once it has begun): one waits in llama-server's queue, 19 in the gateway's.
  await until('one handed on into llama-server\'s queue, the rest in the gateway\'s line', async () => counts().queued === GONE && await metric('requests_deferred') === 1)
  const promptBefore = await metric('prompt_tokens_total')

  const left = performance.now()
  for (const request of gone) request.leave.abort()
  await until('llama-server\'s queue empty and nothing in the gateway\'s line', async () => counts().queued === 0 && await metric('requests_deferred') === 0, 10_000)
  const emptyAfterMs = performance.now() - left
  t.equal(counts().inFlight, 2, 'the two slots are still the holders\'')
  for (const [i, holder] of holders.entries()) {
    t.match(await holder.answer.next(), /^data: \{/, `holder ${i + 1} still streams after the queue emptied`)
  }
  t.comment(`llama-server's queue empty ${Math.round(emptyAfterMs)} ms after the 20 clients left`)
  t.pass(`the gone requests left llama-server's queue while the other slots streamed (${Math.round(emptyAfterMs)} ms)`)

  for (const holder of holders) holder.stop.abort()
  await Promise.all(holders.map((holder) => holder.answer.rest().catch(() => {})))
  await until('no request running in llama-server', async () => counts().inFlight === 0 && await metric('requests_processing') === 0)
  t.equal(await metric('prompt_tokens_total'), promptBefore, 'no prompt token of a gone request evaluated, even once the slots freed')
  t.equal(await metric('requests_deferred'), 0, 'nothing left in llama-server\'s queue')
})
