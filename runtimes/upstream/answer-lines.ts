import type { Readable } from 'node:stream'

const NEWLINE = 0x0a
const DATA_PREFIX = 'data:'

/**
 * The events of a streamed answer, each parsed, whether it came as Server-Sent Events (`data: {...}` lines: an
 * OpenAI-compatible engine, a llamagate) or as NDJSON (`{...}` lines: Ollama's own API), up to `[DONE]` or the end
 * of the body. Split on newlines in bytes, so that a character cut across network chunks is decoded whole; blank
 * lines, comments (`: ping`) and other SSE fields (`event:`) are skipped.
 */
export async function * answerLines (body: Readable): AsyncGenerator<unknown> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of body as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let start = 0
    for (let end = pending.indexOf(NEWLINE, start); end !== -1; end = pending.indexOf(NEWLINE, start)) {
      const line = pending.toString('utf8', start, end)
      start = end + 1
      const data = dataOf(line)
      if (data === '[DONE]') return
      if (data !== null) yield JSON.parse(data)
    }
    pending = start === 0 ? pending : pending.subarray(start)
  }
  const data = dataOf(pending.toString('utf8'))
  if (data !== null && data !== '[DONE]') yield JSON.parse(data)
}

function dataOf (line: string): string | null {
  const text = line.trim()
  if (text.startsWith('{')) return text
  if (!text.startsWith(DATA_PREFIX)) return null
  const data = text.slice(DATA_PREFIX.length).trim()
  return data === '' ? null : data
}
