import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { eventLines, firstInLine, heldSlot, secondInLine, watchedFetch } from '../../helpers/held-slot.js'

// Progress while waiting, on Anthropic's Messages: a streamed message that waits for a slot says so in SSE comments before its
// first event (message_start), which the official Anthropic SDK skips; /api/ps shows it in line.

// Greedy (top_k, which the SDK still sends though its types dropped it): the same few tokens each run, none of
// them the end of the answer.
const message = (content: string): Anthropic.MessageCreateParamsNonStreaming & { top_k: number } =>
  ({ model: 'acme/long', max_tokens: 4, top_k: 1, messages: [{ role: 'user', content }] })


t.test('/v1/messages streamed: queue progress before message_start; the Anthropic SDK reads past it to message_stop', async (t) => {
  // acme/long's one slot held; this request is first in line behind it.
  const { url, release } = await heldSlot(t)
  const queued = await firstInLine(t, url, '/v1/messages', { ...message('in line'), stream: true })

  // The official SDK, in line second: what it is sent is watched.
  const watched = watchedFetch()
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0, fetch: watched.fetch })
  const viaSdk = (async () => {
    const stream = client.messages.stream(message('via the sdk'))
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    return { types, final: await stream.finalMessage() }
  })()
  await secondInLine(t, url, watched.sent, 'the SDK')

  await release()
  const served = await queued.rest()
  const events = eventLines(served)
  t.equal(events[0], 'event: message_start', 'the first event after the comments is message_start')
  t.equal(events.at(-1), 'event: message_stop', 'the first in line served to its end')
  t.notMatch(served.slice(served.indexOf('event: message_start')), /^: /m, 'no comment after the first event')

  const { types, final } = await viaSdk
  t.equal(types[0], 'message_start', 'the SDK\'s first event is message_start: the comments skipped')
  t.equal(types.at(-1), 'message_stop')
  t.ok(types.includes('content_block_delta'), 'text came as deltas')
  const text = final.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  t.ok(text.length > 0, `the SDK assembled the text (${JSON.stringify(text)})`)
  t.equal(final.usage.output_tokens, 4)
  t.match(await (await watched.sent()).rest(), /^(: queued: [^\n]*\n\n)+event: message_start\n/, 'what the SDK read: reports, then its events')
})
