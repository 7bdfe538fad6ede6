import { hadamard, STEER } from './realistic-steering.js'
import type { Tensor } from './tensor-data.js'

// Rules that hold wherever a marker token stands before (realistic-model.ts's `switches` option): a marker's own
// direction in the embedding, and first-layer attention heads that find it.

/** One of realistic-model.ts's `switches`: see RealisticModelOptions there. */
export interface Switch {
  /** The marker token's text, as the vocabulary spells it (add it with `addedTokens` if it is missing). */
  marker: string
  next: string | string[]
  strength: number
}

/** A switch as writeRealisticModel resolves it: token ids, and the Hadamard rows of its two directions. */
export interface ResolvedSwitch { marker: number, next: number[], strength: number, direction: number, markerDirection: number }

// A marker's embedding gets one Hadamard row of its own (norm 8), and every other embedding loses what its random
// part had along it: a switch head's key and value read that row alone, so they are exactly zero away from markers.
const MARK = 1

export function markedEmbedding (embedding: Tensor, switches: ResolvedSwitch[]): Tensor {
  const width = embedding.shape.at(-1)!
  return {
    ...embedding,
    fillRows: (first, out) => {
      embedding.fillRows(first, out)
      for (let r = 0; r * width < out.length; r++) {
        const row = out.subarray(r * width, (r + 1) * width)
        for (const s of switches) {
          let along = 0
          for (let i = 0; i < width; i++) along += row[i]! * hadamard(s.markerDirection, i)
          const keep = first + r === s.marker ? MARK : 0
          for (let i = 0; i < width; i++) row[i]! += (keep - along / width) * hadamard(s.markerDirection, i)
        }
      }
    },
  }
}

// What a switch head's query and a marker's key multiply to (the scores of other positions are 0): e^32 against
// at most 32768 positions of e^0 leaves the marker all the attention but a part in 10^9.
const MARKER_SCORE = 32
const MARKER_KEY = 8

/**
 * The first layer's attention, all of it switches: switch i takes key/value head i and the first query head of
 * its group (the group's other query heads and the heads no switch takes write nothing). The query is the bias
 * alone, in the first component of the head's slowest rotary pair (qwen2 turns dimensions j and j + half
 * together, the last pair slowest: 32768 positions turn it by 0.18 radian at rope base 1e6), so it is the same
 * at every position and the score is nearly so; the key and the value read the marker's direction, scaled by
 * what the first RMSNorm leaves of it on the marker, so the value is 1 at the marker and the output projection
 * writes `strength` times a steering rule's pull along the switch's direction.
 */
export function switchAttention (switches: ResolvedSwitch[], m: { embedding: Tensor, nHead: number, nHeadKv: number, headDim: number }): Tensor[] {
  const width = m.embedding.shape.at(-1)!
  const group = m.nHead / m.nHeadKv
  const slow = m.headDim / 2 - 1
  const q = new Float32Array(width)
  const k = new Float32Array(m.headDim * m.nHeadKv * width)
  const v = new Float32Array(k.length)
  const o = new Float32Array(width * width)
  for (const [i, s] of switches.entries()) {
    const row = new Float32Array(width)
    m.embedding.fillRows(s.marker, row)
    const rms = Math.sqrt(row.reduce((sum, x) => sum + x * x, 0) / width + 1e-6)
    // What the marker's normalized embedding has along its direction's unit vector.
    const along = row.reduce((sum, x, j) => sum + x * hadamard(s.markerDirection, j), 0) / Math.sqrt(width) / rms
    const head = i * group
    q[head * m.headDim + slow] = MARKER_SCORE * Math.sqrt(m.headDim) / MARKER_KEY
    for (let j = 0; j < width; j++) {
      const unit = hadamard(s.markerDirection, j) / Math.sqrt(width)
      k[(i * m.headDim + slow) * width + j] = unit * MARKER_KEY / along
      v[i * m.headDim * width + j] = unit / along
      o[j * width + head * m.headDim] = STEER * s.strength * hadamard(s.direction, j)
    }
  }
  const kvWidth = m.headDim * m.nHeadKv
  return [
    dense('blk.0.attn_q.weight', [width, width], 'f16', new Float32Array(width * width)), dense('blk.0.attn_q.bias', [width], 'f32', q),
    dense('blk.0.attn_k.weight', [kvWidth, width], 'f16', k), dense('blk.0.attn_k.bias', [kvWidth], 'f32', new Float32Array(kvWidth)),
    dense('blk.0.attn_v.weight', [kvWidth, width], 'f16', v), dense('blk.0.attn_v.bias', [kvWidth], 'f32', new Float32Array(kvWidth)),
    dense('blk.0.attn_output.weight', [width, width], 'f16', o),
  ]
}

/** A tensor of the given values. */
function dense (name: string, shape: number[], dtype: Tensor['dtype'], values: Float32Array): Tensor {
  const width = shape.at(-1)!
  return { name, shape, dtype, fillRows: (first, out) => out.set(values.subarray(first * width, first * width + out.length)) }
}
