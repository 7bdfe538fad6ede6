import type { Readable } from 'node:stream'
import { delimitedText, type SplitLimits } from '../../../runtimes/index.js'
import type { Redaction } from '../redaction.js'

const NEWLINE = Buffer.from('\n')
const DATA_PREFIX = 'data:'

/**
 * The events of a streamed answer, each parsed, whether it came as Server-Sent Events (`data: {...}` lines: an
 * OpenAI-compatible engine, a llamagate) or as NDJSON (`{...}` lines: Ollama's own API), up to `[DONE]` or the end
 * of the body. Split on newlines in bytes (delimited-text.ts, within `limits`); blank lines, comments (`: ping`) and
 * other SSE fields (`event:`) are skipped; `redaction`'s secrets are cut out of each line before it is parsed.
 */
export async function * answerLines (body: Readable, limits?: SplitLimits, redaction: Redaction | null = null): AsyncGenerator<unknown> {
  for await (const line of delimitedText(body, NEWLINE, limits)) {
    const data = dataOf(line)
    if (data === '[DONE]') return
    if (data !== null) yield JSON.parse(redaction === null ? data : redaction.text(data))
  }
}

function dataOf (line: string): string | null {
  const text = line.trim()
  if (text.startsWith('{')) return text
  if (!text.startsWith(DATA_PREFIX)) return null
  const data = text.slice(DATA_PREFIX.length).trim()
  return data === '' ? null : data
}
