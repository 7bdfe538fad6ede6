import type { DataRewrite } from './data-rewrite.js'
import { endsEvent, EVENT_END, PartialEvent } from './sse-bytes.js'

const EMPTY = Buffer.alloc(0)

/**
 * What one SSE event (its bytes, up to and including the blank line that ends it) becomes: other bytes (none, one
 * event or several), or null to leave it as it came.
 */
export type EventEdit = (event: Buffer) => Buffer | null

/**
 * A rewrite (stream-relay.ts) that hands `edit` each whole SSE event of a relayed body. A piece whose events all
 * stay as they came, and that ends where an event ends (llama-server writes an event or several per chunk), goes on
 * untouched (null), framing and all: the relay's fast path. An event cut across pieces is held until its end comes.
 */
export function eventRewrite (edit: EventEdit): DataRewrite {
  const held = new PartialEvent()
  return {
    get heldBytes () { return held.bytes },
    push (data) {
      const wasHeld = held.bytes > 0
      const text = held.join(data)
      if (text === null) return EMPTY
      // llama-server writes whole events: a piece that ends one needs no search for its end.
      const last = endsEvent(text) ? text.length - 2 : text.lastIndexOf(EVENT_END)
      if (last === -1) {
        held.hold(text)
        return EMPTY
      }
      const whole = last + 2
      const rest = whole < text.length ? text.subarray(whole) : EMPTY
      held.hold(rest)
      // The events as they go out, made only once one of them changed (the hot path allocates nothing more).
      let pieces: Buffer[] | null = wasHeld || rest.length > 0 ? [] : null
      let start = 0
      while (start < whole) {
        const end = text.indexOf(EVENT_END, start) + 2
        const event = start === 0 && end === text.length ? text : text.subarray(start, end)
        const edited = edit(event)
        if (edited !== null && pieces === null) pieces = start > 0 ? [text.subarray(0, start)] : []
        if (pieces !== null) pieces.push(edited ?? event)
        start = end
      }
      return pieces === null ? null : Buffer.concat(pieces)
    },
    end: () => held.take(),
  }
}

/** The JSON of an SSE event's `data:` line, or null when it has none or it is not JSON (`[DONE]`). */
export function eventData (event: Buffer): { name: string | null, data: Record<string, unknown> } | null {
  const text = event.toString('utf8')
  const at = text.startsWith('data: ') ? 0 : text.indexOf('\ndata: ') + 1
  if (at === 0 && !text.startsWith('data: ')) return null
  const name = /^event: ?(.*)$/m.exec(text.slice(0, at))?.[1] ?? null
  const line = text.slice(at + 6, text.indexOf('\n', at))
  try {
    const data = JSON.parse(line) as unknown
    return data !== null && typeof data === 'object' && !Array.isArray(data) ? { name, data: data as Record<string, unknown> } : null
  } catch {
    return null
  }
}

/** An SSE event of `data`, named when `name` is given. */
export function eventBytes (data: unknown, name: string | null = null): Buffer {
  return Buffer.from(`${name !== null ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`)
}
