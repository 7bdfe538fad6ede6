import type { PieceSlot } from './answer-pieces.js'

// llama-server's usual streamed token, read where it sits in the event's bytes rather than parsed (piece-relay.ts):
// a hook on every piece then costs a scan and the decoding of one short string, not a JSON parse, per token. The
// scans are JS loops over the event's few hundred bytes: a Buffer's compare or indexOf costs more per call than that.

/**
 * A token event's bytes up to its text's opening quote (Anthropic's: around its block's index), and right after its
 * closing one; `json`: where its JSON begins, counted from the event's start.
 */
interface Shape { head: Buffer, indexed: Buffer | null, after: Buffer, json: number }

function shape (head: string, indexed: string | null, after: string): Shape {
  return { head: Buffer.from(head), indexed: indexed !== null ? Buffer.from(indexed) : null, after: Buffer.from(after), json: head.indexOf(DATA) + DATA.length }
}

const DATA = 'data: '
const SHAPES: Readonly<Record<string, Shape>> = {
  // Its first choice's delta holding only its text; after it, the chunk's id, model and so on.
  '/v1/chat/completions': shape('data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"', null, '}}],'),
  '/v1/messages': shape('event: content_block_delta\ndata: {"type":"content_block_delta","index":', ',"delta":{"type":"text_delta","text":"', '}}\n\n'),
}
// What a hook's path reads of an event beside its pieces: an event that has any of these after its text is parsed.
const READ = ['"usage"', '"timings"', '"error"'].map((key) => Buffer.from(key))
// The bytes that follow the opening quote of one of READ: a quote followed by another starts none of them.
const READ_SECOND = new Uint8Array(256)
for (const key of READ) READ_SECOND[key[1]!] = 1

/** The text of a token event, the slot a hook may set it in, where its JSON string lies in the event, and where its JSON begins. */
export class QuickPiece implements PieceSlot {
  readonly kind = 'text'
  /** What a hook set the text to, if it changed it. */
  changed: string | null = null

  constructor (readonly text: string, readonly open: number, readonly close: number, readonly json: number) {}

  replaceText (text: string): void { this.changed = text }

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
  if (shape === undefined || !lies(bytes, shape.head, start, end)) return null
  let open = start + shape.head.length - 1
  if (shape.indexed !== null) {
    let at = open + 1
    while (at < end && bytes[at]! >= 0x30 && bytes[at]! <= 0x39) at++
    if (at === open + 1 || !lies(bytes, shape.indexed, at, end)) return null
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
  if (close === -1 || !lies(bytes, shape.after, close + 1, end) || readsMore(bytes, close + 1, end)) return null
  let text: string
  try {
    text = escaped ? JSON.parse(bytes.toString('utf8', open, close + 1)) as string : bytes.toString('utf8', open + 1, close)
  } catch {
    return null
  }
  // An empty text is no piece (answer-pieces.ts): the parsed event's path says so.
  return text === '' ? null : new QuickPiece(text, open, close, start + shape.json)
}

/** Whether `prefix` lies in `bytes` at `at`, before `end`. */
function lies (bytes: Buffer, prefix: Buffer, at: number, end: number): boolean {
  if (at + prefix.length > end) return false
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false
  return true
}

/** Whether a key a hook's path reads (READ) lies between `from` and `end`. */
function readsMore (bytes: Buffer, from: number, end: number): boolean {
  for (let at = from; at < end; at++) {
    if (bytes[at] !== 0x22 || READ_SECOND[bytes[at + 1]!] !== 1) continue
    for (const key of READ) if (lies(bytes, key, at, end)) return true
  }
  return false
}
