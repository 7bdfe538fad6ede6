import type { Dtype, Tensor } from './tensor-data.js'
import { tinyVocab, type Vocab } from './tiny-vocab.js'

// What the tiny Llama is, whatever file format it is written in: hyperparameters, vocabulary, and tensors
// whose random values depend only on the seed, the tensor and the row, so any row can be made on demand.

export interface TinyLlamaOptions {
  /** Element type of the weight matrices (GGUF norms are always f32). @default 'f16' */
  dtype?: Dtype
  /** Seed of the random weights, 0 to 2^32 - 1: the same seed writes the same bytes. @default 1 */
  seed?: number
  /** Transformer blocks. @default 2 */
  nLayer?: number
  /** Hidden size; a multiple of nHead with an even head size (RoPE rotates pairs). @default 64 */
  nEmbd?: number
  /** Attention (query) heads. @default 4 */
  nHead?: number
  /** Key/value heads, which must divide nHead (fewer than nHead: grouped-query attention). @default nHead */
  nHeadKv?: number
  /** Feed-forward size. @default 128 */
  nFf?: number
  /** Context length the model claims to be trained for. @default 2048 */
  nCtxTrain?: number
  /** Vocabulary pieces besides the 3 special, 256 byte and 2 chat tokens. @default 300 */
  extraPieces?: number
  /** general.name in a GGUF, _name_or_path in config.json. @default 'tiny' */
  name?: string
}

export interface TinyLlama {
  dtype: Dtype
  seed: number
  nLayer: number
  nEmbd: number
  nHead: number
  nHeadKv: number
  headDim: number
  nFf: number
  nCtxTrain: number
  name: string
  vocab: Vocab
  rmsNormEps: number
  ropeFreqBase: number
}

/** The options with their defaults filled in and checked. */
export function tinyLlama (options: TinyLlamaOptions): TinyLlama {
  const { dtype = 'f16', seed = 1, nLayer = 2, nEmbd = 64, nHead = 4, nFf = 128, nCtxTrain = 2048, extraPieces = 300, name = 'tiny' } = options
  const nHeadKv = options.nHeadKv ?? nHead
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be a 32-bit unsigned integer, not ${seed}`)
  for (const [key, value] of Object.entries({ nLayer, nEmbd, nHead, nHeadKv, nFf, nCtxTrain })) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${key} must be a positive integer, not ${value}`)
  }
  if (dtype !== 'f16' && dtype !== 'f32') throw new RangeError(`dtype must be 'f16' or 'f32', not ${String(dtype)}`)
  const headDim = nEmbd / nHead
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) throw new RangeError(`nEmbd (${nEmbd}) / nHead (${nHead}) must be an even integer`)
  if (nHead % nHeadKv !== 0) throw new RangeError(`nHeadKv (${nHeadKv}) must divide nHead (${nHead})`)
  return { dtype, seed, nLayer, nEmbd, nHead, nHeadKv, headDim, nFf, nCtxTrain, name, vocab: tinyVocab(extraPieces), rmsNormEps: 1e-5, ropeFreqBase: 10000 }
}

/** One weight, by its GGUF and its Hugging Face name; `shape` is row-major, [out, in] for a matrix. */
interface WeightSpec {
  gguf: string
  hf: string
  shape: number[]
  /** Half-width of the uniform distribution; none: a norm weight, all ones. */
  scale?: number
  /** Heads of a query or key projection, whose rows GGUF and Hugging Face order differently for RoPE. */
  ropeHeads?: number
}

function weightSpecs (m: TinyLlama): WeightSpec[] {
  const nVocab = m.vocab.tokens.length
  const nEmbdKv = m.headDim * m.nHeadKv
  // Small weights keep activations and logits in a sane range, so sampling does not degenerate.
  const specs: WeightSpec[] = [{ gguf: 'token_embd.weight', hf: 'model.embed_tokens.weight', shape: [nVocab, m.nEmbd], scale: 0.5 }]
  for (let b = 0; b < m.nLayer; b++) {
    const hf = `model.layers.${b}`
    specs.push(
      { gguf: `blk.${b}.attn_norm.weight`, hf: `${hf}.input_layernorm.weight`, shape: [m.nEmbd] },
      { gguf: `blk.${b}.attn_q.weight`, hf: `${hf}.self_attn.q_proj.weight`, shape: [m.nEmbd, m.nEmbd], scale: 0.08, ropeHeads: m.nHead },
      { gguf: `blk.${b}.attn_k.weight`, hf: `${hf}.self_attn.k_proj.weight`, shape: [nEmbdKv, m.nEmbd], scale: 0.08, ropeHeads: m.nHeadKv },
      { gguf: `blk.${b}.attn_v.weight`, hf: `${hf}.self_attn.v_proj.weight`, shape: [nEmbdKv, m.nEmbd], scale: 0.08 },
      { gguf: `blk.${b}.attn_output.weight`, hf: `${hf}.self_attn.o_proj.weight`, shape: [m.nEmbd, m.nEmbd], scale: 0.08 },
      { gguf: `blk.${b}.ffn_norm.weight`, hf: `${hf}.post_attention_layernorm.weight`, shape: [m.nEmbd] },
      { gguf: `blk.${b}.ffn_gate.weight`, hf: `${hf}.mlp.gate_proj.weight`, shape: [m.nFf, m.nEmbd], scale: 0.08 },
      { gguf: `blk.${b}.ffn_up.weight`, hf: `${hf}.mlp.up_proj.weight`, shape: [m.nFf, m.nEmbd], scale: 0.08 },
      { gguf: `blk.${b}.ffn_down.weight`, hf: `${hf}.mlp.down_proj.weight`, shape: [m.nEmbd, m.nFf], scale: 0.08 },
    )
  }
  specs.push(
    { gguf: 'output_norm.weight', hf: 'model.norm.weight', shape: [m.nEmbd] },
    { gguf: 'output.weight', hf: 'lm_head.weight', shape: [nVocab, m.nEmbd], scale: 0.5 },
  )
  return specs
}

/** The tensors as a GGUF holds them: llama.cpp's names, norms in f32. */
export function ggufTensors (m: TinyLlama): Tensor[] {
  return weightSpecs(m).map((w) => ({
    name: w.gguf, shape: w.shape, dtype: w.scale === undefined ? 'f32' : m.dtype, fillRows: rowFiller(m.seed, w, (row) => row),
  }))
}

/**
 * The same tensors as a Hugging Face checkpoint holds them: its names, everything in one dtype, and the query
 * and key rows in the order that llama.cpp's convert_hf_to_gguf.py permutes back into GGUF's, so that
 * converting the checkpoint gives the GGUF's weights.
 */
export function hfTensors (m: TinyLlama): Tensor[] {
  return weightSpecs(m).map((w) => ({
    name: w.hf, shape: w.shape, dtype: m.dtype, fillRows: rowFiller(m.seed, w, w.ropeHeads ? hfToGgufRow(w.shape[0]! / w.ropeHeads) : (row) => row),
  }))
}

/**
 * Hugging Face rotates the two halves of each head (rotate_half); GGUF rotates adjacent pairs. Within a head
 * of `headDim` rows, HF row `half * headDim / 2 + i` is GGUF row `2 * i + half` (convert_hf_to_gguf's permute).
 */
function hfToGgufRow (headDim: number): (row: number) => number {
  const halfDim = headDim / 2
  return (row) => {
    const head = Math.floor(row / headDim)
    const inHead = row % headDim
    return head * headDim + 2 * (inHead % halfDim) + Math.floor(inHead / halfDim)
  }
}

/**
 * A tensor of seeded uniform values in [-scale, scale] (norm weights: all ones, with no scale), the same on
 * every platform for the same seed and name.
 */
export function seededTensor (seed: number, name: string, shape: number[], dtype: Tensor['dtype'], scale?: number): Tensor {
  return { name, shape, dtype: scale === undefined ? 'f32' : dtype, fillRows: rowFiller(seed, { gguf: name, hf: name, shape, ...(scale !== undefined ? { scale } : {}) }, (row) => row) }
}

function rowFiller (seed: number, w: WeightSpec, ggufRow: (row: number) => number): Tensor['fillRows'] {
  const width = w.shape.at(-1)!
  const { scale } = w
  if (scale === undefined) return (_first, out) => out.fill(1)
  const tensorSeed = mix(seed ^ fnv1a(w.gguf))
  return (first, out) => {
    for (let r = 0; r * width < out.length; r++) {
      // mulberry32, seeded per row: small, fast, and the same on every platform.
      let state = mix(tensorSeed + ggufRow(first + r))
      for (let i = r * width, end = i + width; i < end; i++) {
        state = (state + 0x6d2b79f5) | 0
        let t = Math.imul(state ^ (state >>> 15), state | 1)
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
        out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296 * 2 - 1) * scale
      }
    }
  }
}

/** murmur3's 32-bit finalizer: spreads nearby seeds (row numbers) over unrelated states. */
function mix (h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

function fnv1a (s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  return h >>> 0
}
