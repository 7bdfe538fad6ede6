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
