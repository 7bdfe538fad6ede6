/**
 * Rewrites the data of one relayed body as it passes (an upstream's model name put back, its key cut): made for one
 * relay, since it may keep bytes back from one piece for the next (stream-relay.ts applies it).
 */
export interface DataRewrite {
  /** The piece as it goes to the client, or null when it goes as it came. */
  push(data: Buffer): Buffer | null
  /** What it kept back, once the body ended (empty for none). */
  end(): Buffer
  /**
   * The bytes it holds back now (an event not yet ended): the relay bounds them as it bounds a line, so that an
   * upstream that never ends an event cannot make it hold without end. Absent: it holds nothing across pieces.
   */
  readonly heldBytes?: number
}

/** The most a rewrite may hold back where no limit is configured (llama-server's own events are a few hundred bytes). */
export const MAX_HELD_BYTES = 16 << 20

/**
 * `data` with every `from` replaced by `to`, or `data` itself when it holds none. Bytes, not text: relayed chunks are
 * rewritten as they pass (an upstream's model name put back, its key cut), and decoding and encoding each one cost
 * more than the rest of the relay.
 */
export function replaceBytes (data: Buffer, from: Buffer, to: Buffer): Buffer {
  let at = data.indexOf(from)
  if (at === -1) return data
  const pieces: Buffer[] = []
  let start = 0
  for (; at !== -1; at = data.indexOf(from, start)) {
    pieces.push(data.subarray(start, at), to)
    start = at + from.length
  }
  pieces.push(data.subarray(start))
  return Buffer.concat(pieces)
}

/** Two rewrites one after the other (either may be absent), or null for none. */
export function chainedRewrites (first: DataRewrite | null | undefined, then: DataRewrite | null | undefined): DataRewrite | null {
  if (first == null || then == null) return first ?? then ?? null
  return {
    push: (data) => {
      const once = first.push(data)
      return then.push(once ?? data) ?? once
    },
    get heldBytes () { return (first.heldBytes ?? 0) + (then.heldBytes ?? 0) },
    end: () => {
      const rest = first.end()
      return Buffer.concat([then.push(rest) ?? rest, then.end()])
    },
  }
}
