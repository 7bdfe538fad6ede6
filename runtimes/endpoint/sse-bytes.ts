import { ChunkFraming } from './chunk-framing.js'

// SSE framing read straight from the bytes, shared by the relay, its event rewrite and the call hooks' piece relay.

/** The blank line that ends an SSE event. */
export const EVENT_END = Buffer.from('\n\n')

/** Whether `bytes` end where an event does. */
export function endsEvent (bytes: Buffer): boolean {
  return bytes.length >= 2 && bytes[bytes.length - 1] === 0x0a && bytes[bytes.length - 2] === 0x0a
}

/** The SSE events that end in `bytes` (chunk framing's CRLFs never make a blank line of their own). */
export function eventsIn (bytes: Buffer): number {
  let count = 0
  for (let at = bytes.indexOf(EVENT_END); at !== -1; at = bytes.indexOf(EVENT_END, at + 2)) count++
  return count
}

/** Whether `prefix` lies in `bytes` at `at`. */
export function startsAt (bytes: Buffer, prefix: Buffer, at: number): boolean {
  return at + prefix.length <= bytes.length && bytes.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0
}

/** `data` as one chunk of HTTP/1.1 chunked coding, in one buffer. */
export const httpChunk = (data: Buffer): Buffer => ChunkFraming.chunk(data)

/**
 * The start of an event not yet ended, held in the pieces it came in and joined once its end comes: joined at every
 * piece, an event cut into many would cost its length squared. `bytes` is what the relay bounds as a line.
 */
export class PartialEvent {
  private pieces: Buffer[] = []
  bytes = 0

  /** What is held with `data` after it, when an event ends there; null when none does (`data` is held). */
  join (data: Buffer): Buffer | null {
    const last = this.pieces.at(-1)
    const endsAcross = last !== undefined && last[last.length - 1] === 0x0a && data[0] === 0x0a
    if (last !== undefined && !endsAcross && data.indexOf(EVENT_END) === -1) {
      this.pieces.push(data)
      this.bytes += data.length
      return null
    }
    const text = last !== undefined ? Buffer.concat([...this.pieces, data]) : data
    this.pieces = []
    this.bytes = 0
    return text
  }

  /** Holds what follows the last whole event of what `join` gave. */
  hold (rest: Buffer): void {
    if (rest.length === 0) return
    this.pieces = [rest]
    this.bytes = rest.length
  }

  /** What is held, given up (empty for none). */
  take (): Buffer {
    const rest = this.bytes > 0 ? Buffer.concat(this.pieces) : Buffer.alloc(0)
    this.pieces = []
    this.bytes = 0
    return rest
  }
}
