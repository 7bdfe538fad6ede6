import { startsAt } from '../../runtimes/index.js'
import type { PieceSlot } from './answer-pieces.js'

// llama-server's usual streamed token, read where it sits in the event's bytes rather than parsed (piece-relay.ts):
// a hook on every piece then costs a scan and the decoding of one short string, not a JSON parse, per token.

/** A token event's bytes up to its text's opening quote (Anthropic's: around its block's index), and right after its closing one. */
interface Shape { head: Buffer, indexed: Buffer | null, after: Buffer }

const SHAPES: Readonly<Record<string, Shape>> = {
  // Its first choice's delta holding only its text; after it, the chunk's id, model and so on.
  '/v1/chat/completions': { head: Buffer.from('data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"'), indexed: null, after: Buffer.from('}}],') },
  '/v1/messages': {
    head: Buffer.from('event: content_block_delta\ndata: {"type":"content_block_delta","index":'),
    indexed: Buffer.from(',"delta":{"type":"text_delta","text":"'),
    after: Buffer.from('}}\n\n'),
  },
}
// What a hook's path reads of an event beside its pieces: an event that has any of these after its text is parsed.
const READ = [Buffer.from('"usage"'), Buffer.from('"timings"'), Buffer.from('"error"')]

/** The text of a token event, the slot a hook may set it in, where its JSON string lies in the event, and where its JSON begins. */
export class QuickPiece implements PieceSlot {
  readonly kind = 'text'
  /** What a hook set the text to, if it changed it. */
  changed: string | null = null

  constructor (readonly text: string, readonly open: number, readonly close: number, readonly json: number) {}

  set (text: string): void { this.changed = text }

  /** The event (`bytes` from `start` to `end`) with its text as a hook left it, the rest as it came. */
  edited (bytes: Buffer, start: number, end: number): Buffer {
    return Buffer.concat([bytes.subarray(start, this.open), Buffer.from(JSON.stringify(this.changed)), bytes.subarray(this.close + 1, end)])
  }
}

/**
 * The event from `start` to `end` of a stream of `path` as a QuickPiece when it is llama-server's usual token (its
 * text alone in its delta, nothing a hook's path reads after it), else null: it is then parsed. A key within
 * generated text is JSON-escaped (its quotes behind backslashes), so the bytes matched are the event's own.
 */
export function quickPiece (path: string, bytes: Buffer, start: number, end: number): QuickPiece | null {
  const shape = SHAPES[path]
  if (shape === undefined || !startsAt(bytes, shape.head, start)) return null
  let open = start + shape.head.length - 1
  if (shape.indexed !== null) {
    let at = open + 1
    while (at < end && bytes[at]! >= 0x30 && bytes[at]! <= 0x39) at++
    if (at === open + 1 || !startsAt(bytes, shape.indexed, at)) return null
    open = at + shape.indexed.length - 1
  }
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
  if (close === -1 || !startsAt(bytes, shape.after, close + 1)) return null
  const rest = bytes.subarray(close, end)
  for (const key of READ) if (rest.indexOf(key) !== -1) return null
  let text: string
  try {
    text = escaped ? JSON.parse(bytes.toString('utf8', open, close + 1)) as string : bytes.toString('utf8', open + 1, close)
  } catch {
    return null
  }
  // An empty text is no piece (answer-pieces.ts): the parsed event's path says so.
  return text === '' ? null : new QuickPiece(text, open, close, bytes.indexOf(DATA, start) + DATA.length)
}

const DATA = Buffer.from('data: ')
