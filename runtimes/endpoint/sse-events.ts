import type { Readable } from 'node:stream'
import { delimitedText, type SplitLimits } from './delimited-text.js'

const BOUNDARY = Buffer.from('\n\n')
const DATA_PREFIX = 'data: '

/**
 * Reads a Server-Sent Events body and yields the `data` of each event, as text. Events end at a blank line (split
 * in bytes: delimited-text.ts, within `limits` where given). Comment lines (`: ping`) and fields other than `data`
 * are skipped.
 */
export async function * sseData (body: Readable, limits?: SplitLimits): AsyncGenerator<string> {
  for await (const event of delimitedText(body, BOUNDARY, limits)) {
    const data = dataOf(event)
    if (data !== null) yield data
  }
}

function dataOf (event: string): string | null {
  // Nearly every event is one `data: ...` line; join several as the SSE spec says.
  if (event.startsWith(DATA_PREFIX) && !event.includes('\n')) return event.slice(DATA_PREFIX.length)
  const lines = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith(DATA_PREFIX) ? 6 : 5))
  return lines.length > 0 ? lines.join('\n') : null
}
