import OpenAI from 'openai'
import t from 'tap'
import { watchedFetch } from '../../helpers/held-slot.js'
import { importLongContextModel, post, serveTinyModels, sseEvents } from '../../helpers/inference.js'
import { beforeFirstData, sseComments, streamText } from '../../helpers/stream-text.js'
import { until } from '../../helpers/until.js'
import { lowPriorityWhileHeld } from '../../helpers/held-priority.js'

// Progress while waiting, on /v1: a streamed completion that waits says so in SSE comments before its first chunk, which the
// official openai client skips; one that does not wait gets nothing extra.

type Entry = Record<string, any>
const chat = (model: string, content: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model, messages: [{ role: 'user', content }], stream: true, ...extra })

t.test('/v1/chat/completions: progress before the first chunk while it loads and queues; the openai client reads on', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], {
    default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1, max_tokens: 2 },
    // Room for the long answer that holds the slot: with 4,096 it ends when its context is full, ~3 s in.
    models: { 'acme/long': { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, 'acme/long')

  // A cold load within two seconds hears nothing; a longer one hears that it loads (held for certain: no-room.case.ts).
  const cold = await (await post(`${url}/v1/chat/completions`, chat('acme/tiny', 'hi'))).text()
  for (const comment of sseComments(beforeFirstData(cold))) t.match(comment, /^waiting: (to start )?loading acme\/tiny \(\d+\.\d s\)$/)
  t.equal((await sseEvents(new Response(cold))).at(-1), '[DONE]', 'the chunks read as before, ending with [DONE]')

  const warm = await (await post(`${url}/v1/chat/completions`, chat('acme/tiny', 'again'))).text()
  t.same(sseComments(warm), [], 'a request that does not wait gets no progress')
  t.match(warm, /^data: /, 'its first bytes are its first chunk')

  // One generating long holds acme/long's only slot; the next waits in line.
  const holder = new AbortController()
  t.teardown(() => holder.abort())
  const running = streamText(await post(`${url}/v1/chat/completions`, chat('acme/long', 'go on', { max_tokens: 32_000 }), {}, holder.signal))
  await running.readUntil('its first chunk', (text) => text.includes('data: '))
  const restoreHolder = await lowPriorityWhileHeld(t, url, 'acme/long')
  const queued = streamText(await post(`${url}/v1/chat/completions`, chat('acme/long', 'in line')))
  const queuedText = await queued.readUntil('a queue position', (text) => sseComments(text).length > 0)
  // No request of acme/long has ended yet: no expected wait to tell.
  t.match(sseComments(queuedText)[0], /^queued: position 1 of 1 for acme\/long \(\d+\.\d s\)$/, 'position 1 of 1, no estimate before a measured request')

  // The official client, in line second: what it is sent is watched.
  const watched = watchedFetch()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: watched.fetch })
  const viaClient = (async () => {
    const chunks: string[] = []
    const stream = await client.chat.completions.create({ model: 'acme/long', messages: [{ role: 'user', content: 'via the client' }], stream: true })
    for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta?.content ?? '')
    return chunks
  })()
  const ps = await until('two requests in line', async () => {
    const m = ((await (await fetch(`${url}/api/ps`)).json()) as { models: Entry[] }).models.find((e) => e.name === 'acme/long')
    return m?.queued_requests === 2 ? m : undefined
  })
  t.equal(ps.expected_wait, null, 'expected_wait: null while nothing of acme/long was measured')
  // The client's request was in line before /api/ps said so: three more reports to the first in line (one a second)
  // and it has waited past the two seconds after which its own first report goes out.
  const reports = sseComments(await queued.readUntil('its first report', (text) => sseComments(text).length > 0)).length
  await queued.readUntil('three more reports', (text) => sseComments(text).length >= reports + 3)
  // Its own first report read before the line moves: on a busy machine it may go out after the three.
  await (await watched.sent()).readUntil('the client\'s first report', (text) => sseComments(text).length > 0)

  restoreHolder()
  holder.abort()
  await running.rest().catch(() => {})
  t.equal((await sseEvents(new Response(await queued.rest()))).at(-1), '[DONE]', 'the first in line served')
  const chunks = await viaClient
  t.ok(chunks.length > 0, `the openai client read ${chunks.length} chunks`)
  const raw = await (await watched.sent()).rest()
  t.match(sseComments(beforeFirstData(raw))[0], /^queued: position 2 of 2 for acme\/long/, 'the client was sent its queue position and read past it')
})
