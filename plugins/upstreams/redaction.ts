import { replaceBytes, type DataRewrite } from '../../runtimes/index.js'

const REDACTED = '<redacted>'
const REDACTED_BYTES = Buffer.from(REDACTED)
// A header value `<scheme> <token>` (Bearer): the token is the secret.
const SCHEME_TOKEN = /^\S+ (\S+)$/
// Shorter secrets are not cut: they would cut words out of answers.
const SHORTEST = 4

/**
 * Cuts secrets (an upstream's key) out of what a runtime answered, before any of it reaches a client or a log: an
 * engine may echo the Authorization it was sent in an answer, an SSE error event or an error body. Each secret is
 * matched as it was sent and as JSON writes it inside a string; one that an upstream encodes otherwise on purpose
 * (`\u` escapes) is not seen, but such an upstream holds the key and could hand it out anyway.
 */
export class Redaction {
  private readonly bytes: Buffer[]

  private constructor (private readonly texts: string[]) {
    this.bytes = texts.map((text) => Buffer.from(text))
  }

  /** One for `values` (secrets, or header values carrying them), or null when none is long enough to cut. */
  static of (values: readonly string[]): Redaction | null {
    const secrets = new Set<string>()
    for (const value of values) {
      for (const secret of [value, SCHEME_TOKEN.exec(value)?.[1] ?? value]) {
        for (const form of [secret, JSON.stringify(secret).slice(1, -1)]) if (form.length >= SHORTEST) secrets.add(form)
      }
    }
    // The longest first: a whole `Bearer <token>` goes as one.
    return secrets.size === 0 ? null : new Redaction([...secrets].sort((a, b) => b.length - a.length))
  }

  /** `text` with every secret replaced by `<redacted>`. */
  text (text: string): string {
    for (const secret of this.texts) if (text.includes(secret)) text = text.replaceAll(secret, REDACTED)
    return text
  }

  /**
   * The same for one streamed body, piece by piece: a piece that ends with the start of a secret keeps those bytes
   * back until the next shows whether the secret goes on (fewer than a secret's length; an event's last bytes are
   * its blank line, so an honest stream never waits). A piece with nothing to cut goes as it came (`push` says null).
   */
  stream (): DataRewrite {
    let carry: Buffer | null = null
    return {
      push: (data) => {
        let out = carry === null ? data : Buffer.concat([carry, data])
        carry = null
        for (const secret of this.bytes) out = replaceBytes(out, secret, REDACTED_BYTES)
        const hold = startOfSecret(out, this.bytes)
        if (hold > 0) {
          carry = Buffer.from(out.subarray(out.length - hold))
          out = out.subarray(0, out.length - hold)
        }
        return out === data ? null : out
      },
      end: () => {
        const rest = carry ?? Buffer.alloc(0)
        carry = null
        return rest
      },
    }
  }
}

/**
 * `err` with each of `secrets` (and the token of a `Bearer <token>` one) cut out of its message: what was sent to
 * an upstream may come back in its error, and messages reach clients and logs.
 */
export function withoutSecrets (err: unknown, secrets: string[]): unknown {
  const redaction = Redaction.of(secrets)
  if (!(err instanceof Error) || redaction === null) return err
  err.message = redaction.text(err.message)
  if (err.stack !== undefined) err.stack = redaction.text(err.stack)
  return err
}

/** How many of the last bytes of `data` are the start of one of `secrets` (the longest such start; 0: none). */
function startOfSecret (data: Buffer, secrets: Buffer[]): number {
  let hold = 0
  for (const secret of secrets) {
    // The first place the secret's first byte appears near the end gives the longest start.
    for (let at = data.indexOf(secret[0]!, Math.max(0, data.length - secret.length + 1)); at !== -1; at = data.indexOf(secret[0]!, at + 1)) {
      const length = data.length - at
      if (length <= hold) break
      if (data.compare(secret, 0, length, at) === 0) { hold = length; break }
    }
  }
  return hold
}
