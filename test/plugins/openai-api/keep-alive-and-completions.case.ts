import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { post, serveTinyModels, sseEvents } from '../../helpers/inference.js'

// docs/api.md, /v1: "`keep_alive` accepted" on /v1/chat/completions and /v1/completions, and "/v1/completions:
// ... streamed or not ... `stream_options.include_usage`, `[DONE]`".

type Entry = Record<string, any>
const LIMITS = { num_thread: 1, num_ctx: 256, num_parallel: 1 }
const MINUTE = 60_000

async function ps (url: string): Promise<Entry[]> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: Entry[] }).models
}

async function until (what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`)
    await sleep(25)
  }
}

const near = (iso: string, expected: number, toleranceMs = 5000): boolean => Math.abs(Date.parse(iso) - expected) <= toleranceMs
const messages = [{ role: 'user', content: 'hello' }]

t.test('keep_alive on /v1/chat/completions: 0 unloads after the answer (streamed or not), a duration sets expires_at, -1 keeps it', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: LIMITS })
  const chat = (body: Record<string, unknown>): Promise<Response> => post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages, max_tokens: 3, ...body })
  t.equal((await chat({ keep_alive: '10m' })).status, 200)
  const loaded = (await ps(url))[0]!
  t.ok(near(loaded.expires_at, Date.now() + 10 * MINUTE), `keep_alive "10m": expires_at ${loaded.expires_at} about 10 minutes away`)
  t.equal((await chat({ keep_alive: 90 })).status, 200)
  t.ok(near((await ps(url))[0]!.expires_at, Date.now() + 90_000), 'keep_alive 90 (seconds): a minute and a half away')
  t.equal((await chat({ keep_alive: -1 })).status, 200)
  t.ok(Date.parse((await ps(url))[0]!.expires_at) > Date.parse('2300-01-01T00:00:00Z'), 'keep_alive -1: a far-future expires_at')
  const whole = await chat({ keep_alive: 0 })
  t.equal(whole.status, 200)
  t.equal(((await whole.json()) as Entry).object, 'chat.completion', 'the answer came whole')
  await until('unloaded after a keep_alive 0 answer', async () => (await ps(url)).length === 0)
  await until('its llama-server gone', async () => !isAlive(loaded.pid))
  t.pass('keep_alive 0: unloaded after the answer, llama-server gone')
  const stream = await chat({ keep_alive: 0, stream: true })
  t.equal(stream.status, 200)
  const events = await sseEvents(stream)
  t.equal(events.at(-1), '[DONE]', 'the stream was whole')
  await until('unloaded after a streamed keep_alive 0 answer', async () => (await ps(url)).length === 0)
  t.pass('streamed keep_alive 0: unloaded after [DONE]')
  const bad = await chat({ keep_alive: 'later' })
  t.equal(bad.status, 400, 'a keep_alive that is no duration: 400')
  t.match(await bad.json(), { error: { message: /invalid keep_alive/, type: 'invalid_request_error' } })
})

t.test('keep_alive on /v1/completions: "1s" unloads about a second after the answer', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: LIMITS })
  const res = await post(`${url}/v1/completions`, { model: 'acme/tiny', prompt: 'abc', max_tokens: 3, keep_alive: '1s' })
  t.equal(res.status, 200)
  const answered = Date.now()
  t.ok(near((await ps(url))[0]!.expires_at, answered + 1000, 1000), 'expires_at about a second away')
  await until('unloaded after its second', async () => (await ps(url)).length === 0, 5000)
  t.ok(Date.now() - answered >= 900, `unloaded after its keep-alive, not at once (${Date.now() - answered} ms)`)
})

t.test('/v1/completions streamed: text_completion chunks whose text adds up to the unstreamed answer, usage on request, [DONE]', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: LIMITS })
  const body = { model: 'acme/tiny', prompt: 'hello world', max_tokens: 12, temperature: 0, seed: 1 }
  const whole = await (await post(`${url}/v1/completions`, body)).json() as Entry
  t.equal(whole.object, 'text_completion')
  const res = await post(`${url}/v1/completions`, { ...body, stream: true, stream_options: { include_usage: true } })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const events = await sseEvents(res)
  t.equal(events.at(-1), '[DONE]', 'ends with [DONE]')
  t.equal(events.filter((e) => e === '[DONE]').length, 1, 'once')
  const chunks = events.slice(0, -1) as Entry[]
  t.ok(chunks.length >= 2, `several chunks (${chunks.length})`)
  for (const chunk of chunks) {
    t.equal(chunk.object, 'text_completion', 'each chunk is a text_completion')
    t.equal(chunk.model, 'acme/tiny', 'under our model name')
  }
  const withText = chunks.filter((c) => c.choices?.length > 0)
  t.equal(withText.map((c) => c.choices[0].text ?? '').join(''), whole.choices[0].text, 'the streamed text is the unstreamed one (greedy)')
  const finish = withText.map((c) => c.choices[0].finish_reason).filter((r) => r !== null && r !== undefined)
  t.same(finish, ['length'], 'one finish_reason, "length" at max_tokens')
  const usage = chunks.find((c) => c.usage)?.usage
  t.match(usage, { completion_tokens: 12, prompt_tokens: whole.usage.prompt_tokens, total_tokens: 12 + whole.usage.prompt_tokens }, 'include_usage: a usage chunk')
  // A top-level stop ends a streamed completion with finish_reason "stop".
  const word = /[A-Za-z]{4,}/.exec(whole.choices[0].text.slice(4))?.[0]
  if (word === undefined) throw new Error(`no word to stop on in ${JSON.stringify(whole.choices[0].text)}`)
  const stopped = (await sseEvents(await post(`${url}/v1/completions`, { ...body, stream: true, stop: [word] }))).slice(0, -1) as Entry[]
  const stoppedText = stopped.filter((c) => c.choices?.length > 0).map((c) => c.choices[0].text ?? '').join('')
  t.equal(stoppedText, whole.choices[0].text.slice(0, whole.choices[0].text.indexOf(word)), `stop ${JSON.stringify(word)}: the text before it`)
  t.equal(stopped.map((c) => c.choices?.[0]?.finish_reason).filter(Boolean).at(-1), 'stop', 'finish_reason "stop"')
})
