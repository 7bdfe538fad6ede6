import type { GgufValue } from '../gguf-writer.js'
import type { Tensor } from '../tensor-data.js'

/**
 * The architectures the realistic writer knows: llama's blocks (qwen2 with biased q/k/v projections, llama
 * without), and two of each kind whose memory llama-server cannot roll back token by token, so that it keeps
 * context checkpoints instead: hybrids with a recurrent state (qwen35: Gated DeltaNet, lfm2: short
 * convolutions) beside full attention, and sliding-window attention interleaved with global layers (gemma3,
 * gemma4).
 */
export type Architecture = 'qwen2' | 'llama' | 'qwen35' | 'lfm2' | 'gemma3' | 'gemma4'

/** The sizes of a model, defaults filled in, that every architecture's blocks are cut to. */
export interface Dims {
  arch: Architecture
  nEmbd: number
  nLayer: number
  nHead: number
  nHeadKv: number
  /** Attention head size (of the global layers, where an architecture sizes the windowed ones apart). */
  headDim: number
  nFf: number
  nCtxTrain: number
  /** How many tokens back a sliding-window layer sees (gemma3, gemma4). */
  slidingWindow: number
  /** In the hybrid and windowed architectures, every how many layers one attends to the whole context. */
  globalEvery: number
  /** Gated DeltaNet's heads (qwen35): key heads, value heads, and the size of both. */
  linear: { keyHeads: number, valueHeads: number, headDim: number }
}

/** Tensors of seeded random or constant values, the same bytes for the same seed and name. */
export interface Weights {
  /** A weight matrix (f16), uniform in ±scale. @default scale 0.08 */
  matrix: (name: string, shape: number[], scale?: number) => Tensor
  /** An f32 tensor uniform in ±scale: what ggml adds to or multiplies f32 activations by (biases, kernels). */
  random32: (name: string, shape: number[], scale: number) => Tensor
  /** An f32 tensor of one value: norm weights (1), decay rates. @default value 1 */
  filled: (name: string, shape: number[], value?: number) => Tensor
}

/** What one architecture adds to the writer: its GGUF keys and its tensors, named and shaped as llama.cpp loads them. */
export interface ArchitectureWriter {
  /** The `<arch>.*` keys, in the order they are written. */
  hparams: (d: Dims) => Record<string, GgufValue>
  /** Tensors beside the embedding, the blocks and the output (gemma4's rope frequency factors). */
  globals?: (d: Dims, w: Weights) => Tensor[]
  /** Block `b`'s tensors. */
  block: (d: Dims, b: number, w: Weights) => Tensor[]
  /** The final norm's name (lfm2 keeps it under a name of its own). @default 'output_norm.weight' */
  outputNorm?: string
}

export const u32 = (value: number): GgufValue => ({ type: 'u32', value })
export const f32 = (value: number): GgufValue => ({ type: 'f32', value })

/** The keys every architecture has: sizes and head counts. */
export function baseHparams (d: Dims): Record<string, GgufValue> {
  return {
    [`${d.arch}.context_length`]: u32(d.nCtxTrain),
    [`${d.arch}.embedding_length`]: u32(d.nEmbd),
    [`${d.arch}.block_count`]: u32(d.nLayer),
    [`${d.arch}.feed_forward_length`]: u32(d.nFf),
    [`${d.arch}.attention.head_count`]: u32(d.nHead),
    [`${d.arch}.attention.head_count_kv`]: u32(d.nHeadKv),
  }
}

/** The gated feed-forward every architecture here has, after its norm. */
export function ffn (d: Dims, b: number, w: Weights): Tensor[] {
  return [
    w.matrix(`blk.${b}.ffn_gate.weight`, [d.nFf, d.nEmbd]),
    w.matrix(`blk.${b}.ffn_up.weight`, [d.nFf, d.nEmbd]),
    w.matrix(`blk.${b}.ffn_down.weight`, [d.nEmbd, d.nFf]),
  ]
}
