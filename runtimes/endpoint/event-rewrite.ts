import type { DataRewrite } from './data-rewrite.js'

const EVENT_END = Buffer.from('\n\n')

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
  let held: Buffer = Buffer.alloc(0)
  return {
    push (data) {
      const text = held.length > 0 ? Buffer.concat([held, data]) : data
      const wasHeld = held.length > 0
      const last = text.lastIndexOf(EVENT_END)
      if (last === -1) {
        held = text
        return Buffer.alloc(0)
      }
      const whole = text.subarray(0, last + 2)
      held = Buffer.from(text.subarray(last + 2))
      const pieces: Buffer[] = []
      let changed = wasHeld || held.length > 0
      for (let start = 0; start < whole.length;) {
        const end = whole.indexOf(EVENT_END, start) + 2
        const event = whole.subarray(start, end)
        const edited = edit(event)
        if (edited !== null) changed = true
        pieces.push(edited ?? event)
        start = end
      }
      return changed ? Buffer.concat(pieces) : null
    },
    end () {
      const rest = held
      held = Buffer.alloc(0)
      return rest
    },
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
