// Per-key limits on a real llama-server: each limit reached answers 429 with Retry-After and a message
// naming the key and the limit, in the shape of each surface (native, OpenAI, Anthropic), while another key goes on.
import t, { type Test } from 'tap'
import { nextUtcMidnight } from '../../../plugins/quotas/key-quotas.js'
import { buildTestApp } from '../../helpers/app.js'
import { firstEvent, post, sharedServer } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { secretOf, serveWithKeys } from './keyed-server.js'

const SURFACES = ['native', 'openai', 'anthropic'] as const
type Surface = typeof SURFACES[number]

interface Answer { status: number, retryAfter: string | null, body: any }

/** A short, unstreamed request of key `name` on `surface`. */
async function ask (url: string, surface: Surface, name: string, model = 'acme/tiny'): Promise<Answer> {
  const messages = [{ role: 'user', content: 'hi' }]
  const res = surface === 'native'
    ? await post(`${url}/api/chat`, { model, stream: false, messages, options: { max_tokens: 2 } }, { authorization: `Bearer ${secretOf(name)}` })
    : surface === 'openai'
      ? await post(`${url}/v1/chat/completions`, { model, messages, max_tokens: 2 }, { authorization: `Bearer ${secretOf(name)}` })
      : await post(`${url}/v1/messages`, { model, messages, max_tokens: 2 }, { 'x-api-key': secretOf(name) })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() }
}

/** Asserts a 429 in `surface`'s shape whose message matches `message`; returns its Retry-After in seconds. */
function rateLimited (t: Test, surface: Surface, answer: Answer, message: RegExp, openAiType: 'requests' | 'tokens' = 'requests'): number {
  t.equal(answer.status, 429, `${surface}: 429`)
  const seconds = Number(answer.retryAfter)
  t.ok(Number.isInteger(seconds) && seconds >= 1, `${surface}: Retry-After in whole seconds (${answer.retryAfter})`)
  if (surface === 'native') t.match(answer.body, { error: message }, 'native: {error}')
  if (surface === 'openai') t.match(answer.body, { error: { message, type: openAiType, code: 'rate_limit_exceeded', param: null } }, 'openai: its rate limit error')
  if (surface === 'anthropic') t.match(answer.body, { type: 'error', error: { type: 'rate_limit_error', message } }, 'anthropic: its rate_limit_error')
  return seconds
}

/** Starts a request of key `name` that holds a slot of acme/long until `abort`; resolves once it streams. */
async function holdSlot (url: string, name: string): Promise<{ abort: () => Promise<void> }> {
  const controller = new AbortController()
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', stream: true, max_tokens: 32_000, messages: [{ role: 'user', content: 'go on' }] },
    { authorization: `Bearer ${secretOf(name)}` }, controller.signal)
  if (res.status !== 200) throw new Error(`the holding request was refused: ${res.status} ${await res.text()}`)
  const streaming = await firstEvent(res)
  return { abort: async () => { controller.abort(); await streaming.rest().catch(() => {}) } }
}

// Two slots: a key at its limit of one request leaves the other slot to another key.
const doors = sharedServer(() => serveWithKeys(t, { conc: { concurrent: 1 }, rpm: { requests_per_minute: 2 }, free: {} }, {
  default_options: { num_ctx: 4096, num_parallel: 2 },
}))

t.test('concurrent: a second request of a key at its limit is refused on every surface while another key is served', async (t) => {
  const { app, url } = await doors()
  const holder = await holdSlot(url, 'conc')
  for (const surface of SURFACES) {
    const seconds = rateLimited(t, surface, await ask(url, surface, 'conc'),
      /^the API key "conc" has 1 request running, at its limit of 1 \(limits\.concurrent in the keys file\); retry when one ends$/)
    t.equal(seconds, 1)
  }
  t.equal((await ask(url, 'native', 'free')).status, 200, 'another key is served at the same moment')
  t.equal(app.scheduler.requestCounts().get('acme/long')?.inFlight, 1, 'the request holding the limit was running throughout')
  await holder.abort()
  await until('the key to be let in once its request ended', async () => (await ask(url, 'native', 'conc')).status === 200)
})

t.test('requests_per_minute: past the window\'s count, refused on every surface with the wait until a request leaves it', async (t) => {
  const { url } = await doors()
  t.equal((await ask(url, 'native', 'rpm')).status, 200)
  t.equal((await ask(url, 'openai', 'rpm')).status, 200)
  for (const surface of SURFACES) {
    const seconds = rateLimited(t, surface, await ask(url, surface, 'rpm'),
      /^the API key "rpm" made 2 requests in the last minute, at its limit of 2 \(limits\.requests_per_minute in the keys file\); retry in \d+ s$/)
    t.ok(seconds <= 60, `${surface}: within the minute (${seconds} s)`)
  }
  t.equal((await ask(url, 'anthropic', 'free')).status, 200, 'another key is served at the same moment')
})

t.test('queue_share: a key may fill only its part of a model\'s queue; another key still queues', async (t) => {
  // queue_share 0.1 of queue_length 20: two waiting requests.
  const { app, url } = await serveWithKeys(t, { share: { queue_share: 0.1 }, free: {} }, {
    limits: { queue_length: 20 }, default_options: { num_ctx: 4096, num_parallel: 1 },
  })
  const queued = (): number => app.scheduler.requestCounts().get('acme/long')?.queued ?? 0
  const holder = await holdSlot(url, 'free')
  const waiting = [ask(url, 'native', 'share', 'acme/long'), ask(url, 'openai', 'share', 'acme/long')]
  await until('the key\'s two requests to be in line', () => queued() === 2)
  for (const surface of SURFACES) {
    rateLimited(t, surface, await ask(url, surface, 'share', 'acme/long'),
      /^the API key "share" has 2 requests waiting for model "acme\/long", its share of the queue \(limits\.queue_share 0\.1 in the keys file, of limits\.queue_length 20: 2\); retry when one is served$/)
  }
  t.equal(queued(), 2, 'the refused requests took no place in line')
  waiting.push(ask(url, 'anthropic', 'free', 'acme/long'))
  await until('another key\'s request to be in line beside them', () => queued() === 3)
  await holder.abort()
  t.same((await Promise.all(waiting)).map((a) => a.status), [200, 200, 200], 'those in line were served once the slot freed')
})

t.test('concurrent: a router load counts against its key until it is over, though answered at once', async (t) => {
  // Room for one model: acme/tiny's load waits for room while another key's request runs on acme/long.
  const { url } = await serveWithKeys(t, { one: { concurrent: 1 }, free: {} }, { limits: { max_loaded_models: 1 } })
  const holder = await holdSlot(url, 'free')
  const load = await post(`${url}/models/load`, { model: 'acme/tiny' }, { authorization: `Bearer ${secretOf('one')}` })
  t.same({ status: load.status, body: await load.json() }, { status: 200, body: { success: true } }, 'answered at once, as llama-server answers')
  for (const surface of SURFACES) {
    rateLimited(t, surface, await ask(url, surface, 'one', 'acme/long'), /^the API key "one" has 1 request running, at its limit of 1 \(limits\.concurrent in the keys file\); retry when one ends$/)
  }
  const again = await post(`${url}/models/load`, { model: 'acme/long' }, { authorization: `Bearer ${secretOf('one')}` })
  t.equal(again.status, 429, 'nor a second load: loads are the key\'s requests too')
  await again.body?.cancel()
  await holder.abort()
  await until('the load to end and the key to be let in again', async () => (await ask(url, 'native', 'one')).status === 200)
})

t.test('tokens_per_day: refused until 00:00 UTC once a request no longer fits in the day\'s tokens, after a restart too', async (t) => {
  // 40: room for one short request's reservation (its prompt's estimate, ~37 tokens, and what it generates).
  const { app, url } = await serveWithKeys(t, { tokens: { tokens_per_day: 40 }, free: {} })
  t.equal((await ask(url, 'native', 'tokens')).status, 200, 'below the limit: served')
  // Counted when a request's reply is over: the next one's prompt no longer fits in what is left.
  await until('the day\'s tokens to be counted', () => app.usage.tokensToday('tokens') > 0)
  const checkRefused = async (url: string, when: string): Promise<void> => {
    for (const surface of SURFACES) {
      const seconds = rateLimited(t, surface, await ask(url, surface, 'tokens'),
        /^the API key "tokens" used \d+ tokens today \(UTC\) of its limit of 40 \(limits\.tokens_per_day in the keys file\): this request's prompt, about \d+ tokens, does not fit in the \d+ left; retry after 00:00 UTC$/, 'tokens')
      const toMidnight = (nextUtcMidnight(Date.now()) - Date.now()) / 1000
      t.ok(Math.abs(seconds - toMidnight) <= 5, `${surface} ${when}: Retry-After is the time to 00:00 UTC (${seconds} s, ${Math.round(toMidnight)} s)`)
    }
    t.equal((await ask(url, 'native', 'free')).status, 200, `another key is served ${when}`)
  }
  await checkRefused(url, 'now')
  const { config } = app
  await app.close()
  const again = await buildTestApp(config)
  t.teardown(() => again.close())
  await checkRefused(await again.listen({ host: '127.0.0.1', port: 0 }), 'after a restart')
})
