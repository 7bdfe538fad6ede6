import type { Readable } from 'node:stream'

/**
 * A body's text, piece by piece between `delimiter`s, then what follows the last one if anything does. Split in bytes,
 * so that a character cut across network chunks is decoded whole (SSE events, NDJSON lines).
 */
export async function * delimitedText (body: Readable, delimiter: Buffer): AsyncGenerator<string> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of body as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let start = 0
    for (let end = pending.indexOf(delimiter, start); end !== -1; end = pending.indexOf(delimiter, start)) {
      yield pending.toString('utf8', start, end)
      start = end + delimiter.length
    }
    pending = start === 0 ? pending : pending.subarray(start)
  }
  if (pending.length > 0) yield pending.toString('utf8')
}
