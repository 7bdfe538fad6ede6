import type { Readable } from 'node:stream'

const BOUNDARY = Buffer.from('\n\n')
const DATA_PREFIX = 'data: '

/**
 * Reads a Server-Sent Events body and yields the `data` of each event, as text. Events are split on the
 * blank line that ends them, in bytes, so that a multi-byte character split across network chunks is
 * decoded whole. Comment lines (`: ping`) and fields other than `data` are skipped.
 */
export async function * sseData (body: Readable): AsyncGenerator<string> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of body as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let start = 0
    for (let end = pending.indexOf(BOUNDARY, start); end !== -1; end = pending.indexOf(BOUNDARY, start)) {
      const data = dataOf(pending.toString('utf8', start, end))
      if (data !== null) yield data
      start = end + 2
    }
    pending = start === 0 ? pending : pending.subarray(start)
  }
  const last = pending.toString('utf8').trim()
  if (last !== '') {
    const data = dataOf(last)
    if (data !== null) yield data
  }
}

function dataOf (event: string): string | null {
  // Nearly every event is one `data: ...` line; join several as the SSE spec says.
  if (event.startsWith(DATA_PREFIX) && !event.includes('\n')) return event.slice(DATA_PREFIX.length)
  const lines = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith(DATA_PREFIX) ? 6 : 5))
  return lines.length > 0 ? lines.join('\n') : null
}
