import t from 'tap'
import { importLongContextModel, ndjsonEvents, post, serveTinyModels, sseEvents } from '../../helpers/inference.js'
import { beforeFirstData, sseComments, streamText } from '../../helpers/stream-text.js'
import { until } from '../../helpers/until.js'
import { lowPriorityWhileHeld } from '../../helpers/held-priority.js'

// A streamed request that waits (for a load, for a slot) hears where it stands before its first token, as
// SSE comments that clients skip; one that does not wait hears nothing extra; /api/ps shows the queue and its wait.

type Entry = Record<string, any>
const SSE = { accept: 'text/event-stream' }
const chat = (model: string, content: string, options: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model, messages: [{ role: 'user', content }], options })

async function ps (url: string, model: string): Promise<Entry | undefined> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: Entry[] }).models.find((m) => m.name === model)
}

t.test('/api/chat: progress comments before the first token while it loads and while it queues', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], {
    default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1, max_tokens: 2 },
    // Room for the long answer that holds the slot: with 4,096 it ends when its context is full, ~3 s in.
    models: { 'acme/long': { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, 'acme/long')

  // A cold model: a load within two seconds hears nothing, a longer one hears that it loads (a held load's progress, for
  // certain: no-room.case.ts's never-ready runtime). Either way the data events read as before.
  const cold = await (await post(`${url}/api/chat`, chat('acme/tiny', 'hi'), SSE)).text()
  for (const comment of sseComments(beforeFirstData(cold))) t.match(comment, /^waiting: (to start )?loading acme\/tiny \(\d+\.\d s\)$/)
  t.notMatch(cold.split('data: ')[1] ?? '', /^: /m, 'no comment after the first event')
  t.equal(((await sseEvents(new Response(cold))) as Entry[]).at(-1)!.done, true, 'the data events read as before, the comments skipped')

  // Loaded and idle: nothing extra.
  const warm = await (await post(`${url}/api/chat`, chat('acme/tiny', 'again'), SSE)).text()
  t.same(sseComments(warm), [], 'a request that does not wait gets no progress')
  t.match(warm, /^data: /, 'its first bytes are its first event')

  // acme/long: one request of some length to measure its requests (the expected waits count in tenths of a second),
  // then one generating long that holds its only slot.
  t.equal((await post(`${url}/api/chat`, { ...chat('acme/long', 'measure', { max_tokens: 1500 }), stream: false })).status, 200)
  const holder = new AbortController()
  t.teardown(() => holder.abort())
  const running = streamText(await post(`${url}/api/chat`, chat('acme/long', 'go on', { max_tokens: 32_000 }), SSE, holder.signal))
  await running.readUntil('its first token', (text) => text.includes('data: '))
  const restoreHolder = await lowPriorityWhileHeld(t, url, 'acme/long')

  const first = streamText(await post(`${url}/api/chat`, chat('acme/long', 'first in line'), SSE))
  const firstText = await first.readUntil('a queue position', (text) => sseComments(text).length > 0)
  t.match(sseComments(firstText)[0], /^queued: position 1 of 1 for acme\/long \(\d+\.\d s, about \d+\.\d s left\)$/, 'first in line: position 1 of 1, with the expected wait')
  const second = streamText(await post(`${url}/api/chat`, chat('acme/long', 'second in line'), SSE))
  const secondText = await second.readUntil('a queue position', (text) => sseComments(text).length > 0)
  t.match(sseComments(secondText)[0], /^queued: position 2 of 2 for acme\/long/, 'second in line: position 2 of 2')
  // Native NDJSON has no line its clients skip: the head goes out, and only chunks follow.
  const ndjson = post(`${url}/api/chat`, chat('acme/long', 'third in line'), { accept: 'application/x-ndjson' })

  const waiting = await until('three requests in line on /api/ps', async () => { const m = await ps(url, 'acme/long'); return m?.queued_requests === 3 ? m : undefined })
  t.equal(waiting.active_requests, 1)
  t.equal(waiting.loading, null, 'loading: null, it serves')
  t.type(waiting.expected_wait, 'number')
  t.ok(waiting.expected_wait > 0, `expected_wait: ${waiting.expected_wait} s for a request arriving behind three`)
  // A report written before the third joined may still be on its way: the one to read is the first that counts three.
  const countsThree = (comment: string): boolean => / of 3 for /.test(comment)
  const secondLater = await second.readUntil('a report counting the third', (text) => sseComments(text).some(countsThree))
  t.match(sseComments(secondLater).find(countsThree), /^queued: position 2 of 3 /, 'reports go on while it waits, the line counted anew')

  restoreHolder()
  holder.abort()
  await running.rest().catch(() => {})
  for (const [name, stream] of [['first', first], ['second', second]] as const) {
    const events = await sseEvents(new Response(await stream.rest())) as Entry[]
    t.equal(events.at(-1)!.done, true, `the ${name} in line was served once the slot was free`)
  }
  const lines = await ndjsonEvents(await ndjson) as Entry[]
  t.ok(lines.every((l) => l.model === 'acme/long' && typeof l.done === 'boolean'), 'NDJSON: every line a chunk, nothing else')
  t.equal(lines.at(-1)!.done, true)
})
