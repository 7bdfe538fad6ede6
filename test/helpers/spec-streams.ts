import type { Test } from 'tap'
import { anthropicSpec, openAiSpec, type SpecCheck } from './api-specs.js'

type Json = Record<string, any>

/** One SSE event: its `event:` name (null for none) and its data, parsed (`[DONE]` kept as text). */
export interface SseEvent { name: string | null, data: Json | '[DONE]' }

/** A response's SSE events, comments (a waiting request's progress) skipped; anything else is a failure of the test. */
export async function sseOf (res: Response): Promise<SseEvent[]> {
  const text = await res.text()
  return text.split('\n\n').filter((e) => e.trim() !== '' && !e.startsWith(':')).map((block) => {
    const lines = block.split('\n')
    const name = lines[0]!.startsWith('event: ') ? lines.shift()!.slice('event: '.length) : null
    if (lines.length !== 1 || !lines[0]!.startsWith('data: ')) throw new Error(`not one SSE data line: ${JSON.stringify(block)}`)
    const data = lines[0]!.slice('data: '.length)
    return { name, data: data === '[DONE]' ? data : JSON.parse(data) as Json }
  })
}

/** A response's NDJSON lines, parsed. */
export async function ndjsonOf (res: Response): Promise<Json[]> {
  return (await res.text()).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Json)
}

/** Asserts that `value` fits `check`'s schema, naming what it is. */
export function fits (t: Test, check: SpecCheck, value: unknown, what: string): void {
  const errors = check(value)
  t.equal(errors, null, `${what} fits the spec${errors === null ? '' : `: ${errors.slice(0, 800)} in ${JSON.stringify(value).slice(0, 300)}`}`)
}

/**
 * An OpenAI chunk stream (chat or text completions): every chunk fits `chunk`, one id and one `created` throughout, one
 * finish, `[DONE]` last; with `include_usage`, a last chunk of no choices with the usage, and none on the others (null,
 * or absent: the chat chunk's `usage` is nullable and optional; a completion's is optional, not nullable).
 */
export function checkChunkStream (t: Test, events: SseEvent[], chunk: SpecCheck, what: string, options: { includeUsage: boolean }): Json[] {
  t.equal(events.at(-1)?.data, '[DONE]', `${what}: [DONE] last`)
  const chunks = events.slice(0, -1).map((e) => e.data as Json)
  chunks.forEach((c, i) => fits(t, chunk, c, `${what}: chunk ${i}`))
  t.equal(new Set(chunks.map((c) => c.id)).size, 1, `${what}: one id`)
  t.equal(new Set(chunks.map((c) => c.created)).size, 1, `${what}: one created`)
  const finishes = chunks.filter((c) => c.choices?.[0]?.finish_reason != null)
  t.equal(finishes.length, 1, `${what}: one finish`)
  const last = chunks.at(-1)!
  if (options.includeUsage) {
    t.same(last.choices, [], `${what}: the usage chunk has no choices`)
    t.match(last.usage, { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number }, `${what}: and the usage`)
    const others = chunks.slice(0, -1)
    t.ok(others.every((c) => c.usage === null || c.usage === undefined), `${what}: no usage on the chunks before`)
  } else {
    t.ok(chunks.every((c) => c.choices.length > 0), `${what}: no usage chunk unasked`)
  }
  return chunks
}

/**
 * A Responses stream: each event named as its type, numbered from 0, fitting the ResponseStreamEvent of its type;
 * response.created and response.in_progress first, response.completed (or incomplete, failed) last; each output item
 * added before anything about it, done after.
 */
export function checkResponseStream (t: Test, events: SseEvent[], what: string): Json[] {
  const data = events.map((e) => e.data as Json)
  events.forEach((e, i) => {
    t.equal(e.name, data[i]!.type, `${what}: event ${i} is named as its type`)
    const check = openAiSpec.streamEvent(String(data[i]!.type))
    t.ok(check !== null, `${what}: ${data[i]!.type} is one of the spec's events`)
    if (check !== null) fits(t, check, data[i], `${what}: ${data[i]!.type} (${i})`)
  })
  t.same(data.map((d) => d.sequence_number), data.map((_, i) => i), `${what}: numbered from 0 without a gap`)
  t.same(data.slice(0, 2).map((d) => d.type), ['response.created', 'response.in_progress'], `${what}: created, in progress`)
  t.ok(['response.completed', 'response.incomplete', 'response.failed'].includes(String(data.at(-1)?.type)), `${what}: ends with the response`)
  const state = new Map<number, 'added' | 'done'>()
  for (const d of data) {
    if (typeof d.output_index !== 'number') continue
    const now = state.get(d.output_index)
    if (d.type === 'response.output_item.added') t.equal(now, undefined, `${what}: item ${d.output_index} added once`)
    else t.equal(now, 'added', `${what}: ${d.type} while item ${d.output_index} is open`)
    state.set(d.output_index, d.type === 'response.output_item.done' ? 'done' : 'added')
  }
  // A stream that failed leaves the item it was writing open, as OpenAI's does.
  if (data.at(-1)?.type !== 'response.failed') t.ok([...state.values()].every((s) => s === 'done'), `${what}: every item done`)
  return data
}

/**
 * An Anthropic Messages stream: each event named as its type and fitting RawMessageStreamEvent; message_start first,
 * message_delta then message_stop last; blocks indexed from 0, each started, filled and stopped before the next.
 */
export function checkMessageStream (t: Test, events: SseEvent[], what: string): Json[] {
  const data = events.map((e) => e.data as Json)
  const event = anthropicSpec('RawMessageStreamEvent')
  events.forEach((e, i) => {
    t.equal(e.name, data[i]!.type, `${what}: event ${i} is named as its type`)
    fits(t, event, data[i], `${what}: ${data[i]!.type} (${i})`)
  })
  t.equal(data[0]?.type, 'message_start', `${what}: message_start first`)
  t.same(data.slice(-2).map((d) => d.type), ['message_delta', 'message_stop'], `${what}: message_delta, message_stop last`)
  let open: number | null = null
  let next = 0
  for (const d of data.slice(1, -2)) {
    if (d.type === 'content_block_start') {
      t.ok(open === null && d.index === next, `${what}: block ${d.index} starts after the last stopped`)
      open = d.index
      next++
    } else {
      t.ok(d.type === 'content_block_delta' || d.type === 'content_block_stop', `${what}: ${d.type} between the message's start and its delta`)
      t.equal(d.index, open, `${what}: ${d.type} for the open block`)
      if (d.type === 'content_block_stop') open = null
    }
  }
  t.equal(open, null, `${what}: every block stopped`)
  return data
}
