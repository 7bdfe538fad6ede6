// Daily tokens against a key that cheats, on a real llama-server: a client that leaves its streams early
// pays for what it was sent and is stopped at its limit; requests in parallel reserve their tokens at the door.
import t from 'tap'
import { firstEvent, post } from '../../helpers/inference.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'
import { secretOf, serveWithKeys } from './keyed-server.js'

interface TodayUsage { tokens: number, reserved: number, requests: number, prompt: number, generated: number }

async function todayOf (url: string, name: string): Promise<TodayUsage> {
  const res = await fetch(`${url}/api/usage`, { headers: { authorization: `Bearer ${secretOf(name)}` } })
  const body = await res.json() as { keys: Array<{ today: { tokens: number, reserved: number }, totals: { requests: number, prompt_tokens: number, generated_tokens: number } }> }
  const [key] = body.keys
  return { tokens: key!.today.tokens, reserved: key!.today.reserved, requests: key!.totals.requests, prompt: key!.totals.prompt_tokens, generated: key!.totals.generated_tokens }
}

/** The `data:` events of a stream's text that carry generated text (a chunk with content). */
function contentChunks (text: string): number {
  return text.split('\n\n').filter((e) => /"content":"[^"]/.test(e)).length
}

t.test('a key that leaves every stream after ~100 tokens is stopped at its tokens_per_day within a request\'s worth, booked for what it was sent', async (t) => {
  const LIMIT = 2000
  const { url } = await serveWithKeys(t, { leaver: { tokens_per_day: LIMIT }, free: {} })
  const askFree = async (): Promise<void> => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${secretOf('free')}` })
    if (res.status !== 200) throw new Error(`the normal client was answered ${res.status}`)
    await res.arrayBuffer()
  }
  const usual = await usualMs(askFree)
  const read: number[] = []
  let refused: { status: number, body: string } | null = null
  for (let attempt = 0; attempt < 20 && refused === null; attempt++) {
    const controller = new AbortController()
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', stream: true, max_tokens: 1000, messages: [{ role: 'user', content: 'tell me everything' }] },
      { authorization: `Bearer ${secretOf('leaver')}` }, controller.signal)
    if (res.status !== 200) { refused = { status: res.status, body: await res.text() }; break }
    const stream = await firstEvent(res)
    if (attempt === 2) {
      // A normal client of another key, while the attacker's stream is open.
      const started = performance.now()
      await askFree()
      withinUsualTime(t, 'another key\'s request during the attack', performance.now() - started, usual)
    }
    let text = ''
    // The last one let in may have been given fewer tokens than that (what its day had left): it is read whole.
    while (contentChunks(text) < 100 && !text.includes('data: [DONE]')) text += await stream.next()
    read.push(contentChunks(text))
    // Left early (nothing more is read: a body already whole when aborted is never ended by fetch's reader); a stream
    // read to its end is read to the end of its body.
    if (text.includes('data: [DONE]')) await stream.rest()
    else controller.abort()
    // Booked once its reply is over on the gateway's side (the reservation goes then too).
    for (let i = 0; i < 200 && (await todayOf(url, 'leaver')).reserved > 0; i++) await new Promise((resolve) => setImmediate(resolve))
  }
  t.ok(refused !== null, `stopped after ${read.length} streams`)
  t.equal(refused?.status, 429)
  t.match(refused?.body, /the API key \\?"leaver\\?" used \d+ tokens today/)
  const today = await todayOf(url, 'leaver')
  t.equal(today.requests, read.length, 'every stream it left is booked')
  t.ok(today.generated >= read.reduce((a, b) => a + b, 0), `booked for at least what it read (${today.generated} generated, ${read.reduce((a, b) => a + b, 0)} read)`)
  t.equal(today.tokens, today.prompt + today.generated, 'the day counts its prompts and what it was sent')
  // Each stream reserved its prompt's estimate and a cap within what was left. Past the limit there can only be an
  // event or two of a stream that are not tokens (its first), and a finished request's prompt past its estimate.
  t.ok(today.tokens <= LIMIT + 5, `the day's tokens (${today.tokens}) stay within the limit of ${LIMIT}`)
  t.ok(today.tokens >= LIMIT - 1000 - 50, `and it was stopped near it, within one request's cap (${today.tokens})`)
  t.equal(today.reserved, 0, 'nothing stays reserved once its streams are over')
  await askFree()
  t.pass('another key is served once the attacker is stopped')
})

t.test('8 requests at once cannot pass tokens_per_day or concurrent: each reserves its prompt and cap at the door', async (t) => {
  const LIMIT = 600
  const { app, url } = await serveWithKeys(t, { par: { tokens_per_day: LIMIT, concurrent: 3 } }, { default_options: { num_ctx: 4096, num_parallel: 4 } })
  let most = 0
  const watch = setInterval(() => { most = Math.max(most, app.scheduler.requestCounts().get('acme/long')?.inFlight ?? 0) }, 5)
  t.teardown(() => clearInterval(watch))
  const answers = await Promise.all(Array.from({ length: 8 }, async () => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', max_tokens: 200, messages: [{ role: 'user', content: 'go on' }] }, { authorization: `Bearer ${secretOf('par')}` })
    return { status: res.status, body: await res.json() as any }
  }))
  clearInterval(watch)
  const served = answers.filter((a) => a.status === 200)
  const refused = answers.filter((a) => a.status === 429)
  t.equal(served.length + refused.length, 8, `every request served or refused (${answers.map((a) => a.status).join(' ')})`)
  t.ok(served.length >= 1 && served.length <= 3, `${served.length} served: at most the 3 of concurrent`)
  t.ok(most <= 3, `at most 3 in flight at once (${most})`)
  for (const r of refused) t.match(r.body.error.message, /limits\.(concurrent|tokens_per_day)/, 'a refusal names the limit it met')
  const generated = served.reduce((sum, a) => sum + (a.body.usage.completion_tokens as number), 0)
  const prompts = served.reduce((sum, a) => sum + (a.body.usage.prompt_tokens as number), 0)
  const today = await todayOf(url, 'par')
  t.equal(today.tokens, prompts + generated, 'booked as the answers reported')
  // The caps were reserved against prompt estimates, which a template's default system prompt does not pass here.
  t.ok(today.tokens <= LIMIT, `the day's tokens (${today.tokens}) stay within the limit of ${LIMIT}`)
  const capped = served.filter((a) => a.body.choices[0].finish_reason === 'length' && a.body.usage.completion_tokens < 200)
  t.ok(served.length < 3 || capped.length >= 1, 'a request let in with less than it asked for got what was left, cut for length')
  // What is left goes to the next ones, each cut to it, until a prompt no longer fits: the day ends at its limit.
  let next: Response | undefined
  for (let i = 0; i < 5; i++) {
    next = await post(`${url}/v1/chat/completions`, { model: 'acme/long', max_tokens: 200, messages: [{ role: 'user', content: 'go on' }] }, { authorization: `Bearer ${secretOf('par')}` })
    if (next.status !== 200) break
    await next.arrayBuffer()
  }
  t.equal(next?.status, 429, 'the day is spent')
  t.ok((await todayOf(url, 'par')).tokens <= LIMIT, 'and within its limit')
})
