import OpenAI from 'openai'
import t from 'tap'
import { eventLines, firstInLine, heldSlot, secondInLine, watchedFetch } from '../../helpers/held-slot.js'

// Progress while waiting, on /v1/responses: a streamed response that waits for a slot says so in SSE comments before its first
// event (response.created), which the official openai client skips; /api/ps shows it in line.

// The answers in line end on their own (response.completed, not incomplete at max_output_tokens): the end-of-text
// token is no longer ignored, and this model says it every few hundred tokens (seed 1: the same answers each run).
const ask = (input: string): OpenAI.Responses.ResponseCreateParamsStreaming =>
  Object.assign({ model: 'acme/long', input, stream: true as const, max_output_tokens: 8000 }, { options: { ignore_eos: false, seed: 1 } })


t.test('/v1/responses streamed: queue progress before response.created; the openai client reads past it to response.completed', async (t) => {
  // acme/long's one slot held; this request is first in line behind it.
  const { url, release } = await heldSlot(t)
  const queued = await firstInLine(t, url, '/v1/responses', ask('in line'))

  // The official client, in line second: what it is sent is watched.
  const watched = watchedFetch()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: watched.fetch })
  const viaClient = (async () => {
    const events: OpenAI.Responses.ResponseStreamEvent[] = []
    for await (const event of await client.responses.create(ask('via the client'))) events.push(event)
    return events
  })()
  await secondInLine(t, url, watched.sent, 'the client')

  await release()
  const served = await queued.rest()
  const names = eventLines(served)
  t.equal(names[0], 'event: response.created', 'the first event after the comments is response.created')
  t.equal(names.at(-1), 'event: response.completed', 'the first in line served to its end')
  t.notMatch(served.slice(served.indexOf('event: response.created')), /^: /m, 'no comment after the first event')

  const events = await viaClient
  t.same(events.slice(0, 2).map((e) => e.type), ['response.created', 'response.in_progress'], 'the client\'s first events: the comments skipped')
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'every event read, numbered from 0')
  const last = events.at(-1)!
  t.equal(last.type, 'response.completed')
  const response = (last as OpenAI.Responses.ResponseCompletedEvent).response
  t.match(response, { status: 'completed', model: 'acme/long' })
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')
  t.ok(deltas.length > 0, `text came as deltas (${deltas.length} characters)`)
  const [message] = response.output as OpenAI.Responses.ResponseOutputMessage[]
  t.match(message?.content, [{ type: 'output_text', text: deltas }], 'the completed response\'s message holds the deltas joined')
  t.match(await (await watched.sent()).rest(), /^(: queued: [^\n]*\n\n)+event: response\.created\n/, 'what the client read: reports, then its events')
})
