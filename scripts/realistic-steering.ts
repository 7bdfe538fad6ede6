import type { Tensor } from './tensor-data.js'

// How realistic-model.ts steers what a random-weight model says next (its `steering` option).

// Each token's embedding gets a large direction (norm 16 against the random rest's 2.3) naming the token to say
// after it. The residual stream keeps it, so the last hidden state points along it, and the output row of the
// token it names points along it too: a logit near 32 (64 dimensions) far above the random rows' (spread about
// 2.3). The directions are rows of a Hadamard matrix (entries ±1, mutually orthogonal), the all-ones row left out.
export const STEER = 2

/** After `before` (null: any other token), `next[0]`, else `next[1]` where a grammar forbids it, and so on. */
export interface Steer { before: number | null, next: number[] }

export function hadamard (row: number, column: number): number {
  let bits = row & column
  let parity = 0
  while (bits) { parity ^= bits & 1; bits >>>= 1 }
  return parity ? -1 : 1
}

/**
 * One direction per steering rule (Hadamard rows 1, 2, ...), then one per switch, and the output rows that point
 * along each.
 */
function directions (steering: Array<{ next: number[] }>, width: number, gain: number): Array<{ row: number, token: number, strength: number }> {
  if (steering.length >= width) throw new Error(`at most ${width - 1} steering rules for ${width} dimensions`)
  // Each fallback a logit about 3 (times the gain) below the one before it: far enough to lose, near enough to
  // win where it may.
  return steering.flatMap((s, i) => s.next.map((token, k) => ({ row: i + 1, token, strength: gain * (0.5 - 0.05 * k) })))
}

export function steeredEmbedding (embedding: Tensor, steering: Steer[]): Tensor {
  const width = embedding.shape.at(-1)!
  const after = new Map(steering.flatMap((s, i) => s.before === null ? [] : [[s.before, i + 1] as const]))
  const otherwise = steering.findIndex((s) => s.before === null) + 1
  return {
    ...embedding,
    fillRows: (first, out) => {
      embedding.fillRows(first, out)
      for (let r = 0; r * width < out.length; r++) {
        const direction = after.get(first + r) ?? otherwise
        if (direction === 0) continue
        for (let i = 0; i < width; i++) out[r * width + i]! += STEER * hadamard(direction, i)
      }
    },
  }
}

export function steeredOutput (output: Tensor, steering: Array<{ next: number[] }>, gain: number): Tensor {
  const width = output.shape.at(-1)!
  const rows = directions(steering, width, gain)
  return {
    ...output,
    fillRows: (first, out) => {
      output.fillRows(first, out)
      const touched = new Set<number>()
      for (const { row, token, strength } of rows) {
        const r = token - first
        if (r < 0 || r * width >= out.length) continue
        // A token two rules name points along both directions.
        if (!touched.has(r)) out.fill(0, r * width, (r + 1) * width)
        touched.add(r)
        for (let i = 0; i < width; i++) out[r * width + i]! += strength * hadamard(row, i)
      }
    },
  }
}

/**
 * One rule, "say `token` after any token", for a model whose output projection is its embedding (tied, so no
 * output.weight: the model keeps the size of the one it imitates). Every row gets one Hadamard row u, the token's
 * row gets it twice: whatever the last token was, the hidden state leans along u, and the token's logit gains
 * twice what any other gains, |u|² = n_embd, far above what the random parts add (about n_embd / 12).
 */
export function tiedSteeredEmbedding (embedding: Tensor, token: number): Tensor {
  const width = embedding.shape.at(-1)!
  return {
    ...embedding,
    fillRows: (first, out) => {
      embedding.fillRows(first, out)
      for (let r = 0; r * width < out.length; r++) {
        const times = first + r === token ? 2 : 1
        for (let i = 0; i < width; i++) out[r * width + i]! += times * hadamard(1, i)
      }
    },
  }
}
