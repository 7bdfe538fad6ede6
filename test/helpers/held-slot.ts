import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { lowPriorityWhileHeld } from './held-priority.js'
import { importLongContextModel, post, serveTinyModels } from './inference.js'
import { sseComments, streamText } from './stream-text.js'
import { until } from './until.js'

/** A stream's `event: <type>` lines: its events' names, in order (comments and data left out). */
export const eventLines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('event: '))

/**
 * A gateway whose acme/long has one slot, held by a streamed chat completion that runs until `release()`: the next
 * request of acme/long waits in line. The holder asks 32,000 tokens of a 32k context (with the 4,096 of the defaults
 * it would end when its context filled, ~3 s in on a fast run), through chat completions because llama-server's
 * Messages conversion drops ignore_eos and a long Messages answer may end at any token.
 */
export async function heldSlot (t: Test): Promise<{ app: FastifyInstance, url: string, release: () => Promise<void> }> {
  const { app, url } = await serveTinyModels(t, [], {
    default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1, max_tokens: 2 },
    models: { 'acme/long': { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, 'acme/long')
  const holder = new AbortController()
  t.teardown(() => holder.abort())
  const hold = { model: 'acme/long', messages: [{ role: 'user', content: 'go on' }], max_tokens: 32_000, stream: true }
  const running = streamText(await post(`${url}/v1/chat/completions`, hold, {}, holder.signal))
  await running.readUntil('its first chunk', (text) => text.includes('data: '))
  const restore = await lowPriorityWhileHeld(t, url, 'acme/long')
  return { app, url, release: async () => { restore(); holder.abort(); await running.rest().catch(() => {}) } }
}

/**
 * Sends `body` to `path` as the first in line behind the held slot and checks its stream so far: open at once (its
 * first report is its first bytes), `queued: position 1 of 1` without an estimate (no request of acme/long has ended
 * yet), and nothing but comments. Returns the stream, to be read on once the slot is free.
 */
export async function firstInLine (t: Test, url: string, path: string, body: unknown): Promise<ReturnType<typeof streamText>> {
  const res = await post(`${url}${path}`, body)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/, 'the stream opened by its first report')
  const queued = streamText(res)
  const text = await queued.readUntil('a queue position', (x) => sseComments(x).length > 0)
  t.match(sseComments(text)[0], /^queued: position 1 of 1 for acme\/long \(\d+\.\d s\)$/, 'position 1 of 1, no estimate before a measured request')
  t.same(eventLines(text), [], 'nothing but comments while it waits')
  return queued
}

/** A reader of a response's text as it comes. */
export type StreamReader = ReturnType<typeof streamText>

/**
 * A fetch for an official client (its `fetch` option) that keeps a reader of each answer's body (a clone, read as
 * it comes): what the client was sent, whatever it made of it. `sent()` waits for the first request's answer.
 */
export function watchedFetch (): { fetch: typeof fetch, sent: () => Promise<StreamReader> } {
  let watched: StreamReader | undefined
  return {
    fetch: async (input, init) => {
      const res = await fetch(input, init)
      watched ??= streamText(res.clone())
      return res
    },
    sent: () => until('the client\'s request sent', () => watched),
  }
}

/**
 * The client behind `firstInLine`'s request: once /api/ps has both in line (the holder serving, no expected wait
 * before a measured request), its first bytes are its own report, `queued: position 2 of 2`.
 */
export async function secondInLine (t: Test, url: string, sent: () => Promise<StreamReader>, who: string): Promise<void> {
  const ps = await until('two requests in line on /api/ps', async () => {
    const m = ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<Record<string, any>> }).models.find((e) => e.name === 'acme/long')
    return m?.queued_requests === 2 ? m : undefined
  })
  t.equal(ps.active_requests, 1, 'the holder serves')
  t.equal(ps.expected_wait, null, 'expected_wait: null while nothing of acme/long was measured')
  const text = await (await sent()).readUntil(`${who}'s first report`, (x) => sseComments(x).length > 0)
  t.match(sseComments(text)[0], /^queued: position 2 of 2 for acme\/long \(\d+\.\d s\)$/, `${who} was sent its queue position`)
}
