import type { Readable } from 'node:stream'
import type { ReadLimits } from './answer-limits.js'

/** What one split body may hold: its longest piece and all its bytes; past either, `tooLarge` says which and is thrown. */
export type SplitLimits = Pick<ReadLimits, 'lineBytes' | 'answerBytes' | 'tooLarge'>

// A held piece's buffer shrinks back once it holds less than a quarter of this much.
const KEPT_BYTES = 64 << 10

/**
 * A body's text, piece by piece between `delimiter`s, then what follows the last one if anything does. Split in bytes,
 * so that a character cut across network chunks is decoded whole (SSE events, NDJSON lines). Linear in the body: a
 * piece that spans reads is copied once into a buffer that doubles as it grows, and only the new bytes are searched
 * (a concat of all held bytes per read made a long line quadratic: 48 MB without a newline took 8.6 s of CPU).
 */
export async function * delimitedText (body: Readable, delimiter: Buffer, limits?: SplitLimits): AsyncGenerator<string> {
  const maxLine = limits?.lineBytes ?? Infinity
  const maxTotal = limits?.answerBytes ?? Infinity
  let held: Buffer | null = null
  let heldLength = 0
  let total = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length
    if (total > maxTotal) throw limits!.tooLarge('answerBytes')
    let data = chunk
    let from = 0
    if (heldLength > 0) {
      // A delimiter may begin in the last held bytes; nothing before them can end the piece.
      from = Math.max(0, heldLength - delimiter.length + 1)
      held = room(held!, heldLength, chunk.length)
      chunk.copy(held, heldLength)
      heldLength += chunk.length
      data = held.subarray(0, heldLength)
    }
    let start = 0
    for (let end = data.indexOf(delimiter, from); end !== -1; end = data.indexOf(delimiter, start)) {
      if (end - start > maxLine) throw limits!.tooLarge('lineBytes')
      yield data.toString('utf8', start, end)
      start = end + delimiter.length
    }
    const rest = data.length - start
    if (rest > maxLine) throw limits!.tooLarge('lineBytes')
    if (data === chunk) {
      if (rest > 0) {
        held = room(held, 0, rest)
        chunk.copy(held, 0, start)
      }
    } else if (start > 0) {
      held = rest * 4 < held!.length && held!.length > KEPT_BYTES ? Buffer.from(held!.subarray(start, heldLength)) : held!.copyWithin(0, start, heldLength)
    }
    heldLength = rest
  }
  if (heldLength > 0) yield held!.toString('utf8', 0, heldLength)
}

/** `held` if it has room for `more` bytes after its first `keep`, else a buffer twice as large with those copied. */
function room (held: Buffer | null, keep: number, more: number): Buffer {
  if (held !== null && held.length >= keep + more) return held
  const grown = Buffer.allocUnsafe(Math.max(keep + more, 2 * (held?.length ?? 0), 4096))
  if (held !== null && keep > 0) held.copy(grown, 0, 0, keep)
  return grown
}
