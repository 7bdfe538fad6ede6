import type { PieceSlot } from './answer-pieces.js'

// llama-server's usual streamed chat token, read where it sits in the event's bytes rather than parsed (piece-relay.ts):
// a hook on every piece then costs a scan and the decoding of one short string, not a JSON parse, per token.

const HEAD = Buffer.from('data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"')
const AFTER = Buffer.from('}}],')
// What a hook's path reads of an event beside its pieces: an event that has any of these is parsed.
const READ = [Buffer.from('"usage"'), Buffer.from('"timings"'), Buffer.from('"error"')]

/** The text of a chat token event, the slot a hook may set it in, and where its JSON string lies in the event. */
export class QuickPiece implements PieceSlot {
  readonly kind = 'text'
  /** What a hook set the text to, if it changed it. */
  changed: string | null = null

  constructor (readonly text: string, readonly open: number, readonly close: number) {}

  set (text: string): void { this.changed = text }

  /** The event (`bytes` from `start` to `end`) with its text as a hook left it, the rest as it came. */
  edited (bytes: Buffer, start: number, end: number): Buffer {
    return Buffer.concat([bytes.subarray(start, this.open), Buffer.from(JSON.stringify(this.changed)), bytes.subarray(this.close + 1, end)])
  }
}

/**
 * The event from `start` to `end` as a QuickPiece when it is llama-server's usual chat token (one `data:` line, its
 * first choice's delta holding only its text, nothing a hook's path reads after it), else null: it is then parsed.
 * A key within generated text is JSON-escaped (its quotes behind backslashes), so the bytes matched are the event's own.
 */
export function quickChatPiece (bytes: Buffer, start: number, end: number): QuickPiece | null {
  if (end - start < HEAD.length || bytes.compare(HEAD, 0, HEAD.length, start, start + HEAD.length) !== 0) return null
  const open = start + HEAD.length - 1
  let escaped = false
  let close = -1
  for (let at = open + 1; at < end; at++) {
    const byte = bytes[at]
    if (byte === 0x5c) {
      escaped = true
      at++
    } else if (byte === 0x22) {
      close = at
      break
    }
  }
  if (close === -1 || close + 1 + AFTER.length > end || bytes.compare(AFTER, 0, AFTER.length, close + 1, close + 1 + AFTER.length) !== 0) return null
  const rest = bytes.subarray(close, end)
  for (const key of READ) if (rest.indexOf(key) !== -1) return null
  let text: string
  try {
    text = escaped ? JSON.parse(bytes.toString('utf8', open, close + 1)) as string : bytes.toString('utf8', open + 1, close)
  } catch {
    return null
  }
  // An empty text is no piece (answer-pieces.ts): the parsed event's path says so.
  return text === '' ? null : new QuickPiece(text, open, close)
}
