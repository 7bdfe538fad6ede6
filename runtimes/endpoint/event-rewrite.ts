import type { DataRewrite } from './data-rewrite.js'
import { endsEvent, EVENT_END, PartialEvent, startsAt } from './sse-bytes.js'

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

const DATA = Buffer.from('data: ')
const NAME = Buffer.from('event: ')

/**
 * An SSE event's name and the JSON object of its data, or null where its data is none or not an object (`[DONE]`, a
 * comment): the one reader of the events of a relayed stream, for the surfaces' rewrites and the call hooks alike.
 * The event lies in `bytes` from `start` to `end`, its blank line included.
 */
export function eventData (bytes: Buffer, start = 0, end = bytes.length): { name: string | null, data: Record<string, any> } | null {
  let name: string | null = null
  let json: string
  // Nearly every event is one `data: ` line, or Anthropic's `event: ` line and one `data: ` line: only the JSON is decoded.
  const first = bytes.indexOf(0x0a, start)
  if (first === end - 2 && startsAt(bytes, DATA, start)) {
    json = bytes.toString('utf8', start + DATA.length, end - 2)
  } else if (startsAt(bytes, NAME, start) && startsAt(bytes, DATA, first + 1) && bytes.indexOf(0x0a, first + 1) === end - 2) {
    name = bytes.toString('utf8', start + NAME.length, first)
    json = bytes.toString('utf8', first + 1 + DATA.length, end - 2)
  } else {
    // Any other: several `data:` lines joined as the SSE spec says, other fields skipped.
    const data: string[] = []
    for (const line of bytes.toString('utf8', start, end).split('\n')) {
      if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
      else if (line.startsWith('event:')) name = line.slice(line.startsWith('event: ') ? 7 : 6)
    }
    if (data.length === 0) return null
    json = data.join('\n')
  }
  if (json[0] !== '{') return null
  try {
    return { name, data: JSON.parse(json) as Record<string, any> }
  } catch {
    return null
  }
}

/** An SSE event of `data`, named when `name` is given. */
export function eventBytes (data: unknown, name: string | null = null): Buffer {
  return Buffer.from(`${name !== null ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`)
}
