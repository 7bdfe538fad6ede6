/** A piece of a forced call as the answer's text reveals it: the call's name once, then its arguments in pieces. */
export interface CallDelta {
  /** Which call, from 0. */
  index: number
  /** Set on the call's first piece. */
  name?: string
  /** More of the arguments' JSON text. */
  arguments?: string
}

/** A call read whole, or as far as the answer went (cut at the token limit: its arguments end early). */
export interface DecodedCall { name: string, arguments: string }

type State = 'lead' | 'between' | 'head' | 'args' | 'tail' | 'done'

// The start of one call, up to where its arguments begin (forced-call-schema.ts writes the name first).
const CALL_HEAD = /^\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:$/
// More than a call's head can be without matching: a bound on what is held back.
const MAX_HEAD = 4096

/**
 * Reads an answer held to forced-call-schema.ts's schema as it streams, and tells the calls in it: each call's name
 * as soon as it is written, its arguments as they come. The grammar fixes the shape, so a small scanner does: skip
 * to the opening brace (or bracket, for a list of calls; llama-server may let a "```json" fence come first), read
 * the name, then follow the arguments' JSON to its closing brace, strings and escapes counted.
 */
export class ForcedCallDecoder {
  private state: State = 'lead'
  private head = ''
  private depth = 0
  private inString = false
  private escaped = false
  private readonly found: DecodedCall[] = []

  /** `list`: the answer is a list of calls (parallel calls allowed), else one call. */
  constructor (private readonly list: boolean) {}

  /** The calls read so far. */
  get calls (): readonly DecodedCall[] { return this.found }

  /** Whether the answer's JSON closed: every call whole. */
  get complete (): boolean { return this.state === 'done' }

  /** The pieces of calls `text` (the answer's next text) holds, at most one per call, in order. */
  push (text: string): CallDelta[] {
    const out: CallDelta[] = []
    let args = ''
    const flush = (): void => {
      if (args === '') return
      const last = out.at(-1)
      const index = this.found.length - 1
      if (last?.index === index) last.arguments = (last.arguments ?? '') + args
      else out.push({ index, arguments: args })
      this.found[index]!.arguments += args
      args = ''
    }
    for (const c of text) {
      switch (this.state) {
        case 'lead':
          if (c === (this.list ? '[' : '{')) this.state = this.list ? 'between' : 'head'
          if (c === '{') this.head = c
          break
        case 'between':
          if (c === '{') { this.state = 'head'; this.head = c } else if (c === ']') this.state = 'done'
          break
        case 'head': {
          this.head += c
          const match = c === ':' ? CALL_HEAD.exec(this.head) : null
          if (match !== null) {
            this.found.push({ name: JSON.parse(match[1]!) as string, arguments: '' })
            out.push({ index: this.found.length - 1, name: this.found.at(-1)!.name })
            this.state = 'args'
            this.depth = 0
          } else if (this.head.length > MAX_HEAD) {
            this.state = 'done'
          }
          break
        }
        case 'args':
          if (this.depth === 0 && !this.inString && /\s/.test(c)) break
          args += c
          if (this.scan(c)) { flush(); this.state = 'tail' }
          break
        case 'tail':
          if (c === '}') this.state = this.list ? 'between' : 'done'
          break
        case 'done':
          break
      }
    }
    flush()
    return out
  }

  // One character of the arguments' JSON: true when it closed the value.
  private scan (c: string): boolean {
    if (this.inString) {
      if (this.escaped) this.escaped = false
      else if (c === '\\') this.escaped = true
      else if (c === '"') this.inString = false
      return false
    }
    if (c === '"') this.inString = true
    else if (c === '{' || c === '[') this.depth++
    else if (c === '}' || c === ']') return --this.depth === 0
    return false
  }
}
