import { GgmlType, writeGguf, type GgufValue, type TensorSpec } from './gguf-writer.js'
import { CHAT_TEMPLATE, tinyVocab } from './tiny-vocab.js'

export interface TinyModelOptions {
  /** Where to write the GGUF. */
  file: string
  /** Element type of the weight matrices (norms are always f32). @default 'f16' */
  dtype?: 'f32' | 'f16'
  /** Seed of the random weights: the same seed writes the same bytes. @default 1 */
  seed?: number
  /** @default 2 */
  nLayer?: number
  /** @default 64 */
  nEmbd?: number
  /** @default 4 */
  nHead?: number
  /** @default nHead */
  nHeadKv?: number
  /** @default 128 */
  nFf?: number
  /** @default 2048 */
  nCtxTrain?: number
  /** Vocabulary pieces besides special and byte tokens. @default 300 */
  extraPieces?: number
  /** general.name @default 'tiny' */
  name?: string
}

/** mulberry32: small, fast, and deterministic across platforms. */
function random (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Writes a tiny Llama-architecture GGUF with random weights and a SentencePiece-style vocabulary. With the
 * defaults it is about 300 KB and llama-server loads it in a fraction of a second: the test model, the
 * benchmark model (larger parameters) and the demo model of a fresh install.
 */
export async function writeTinyGguf (options: TinyModelOptions): Promise<{ file: string, bytes: number }> {
  const { file, dtype = 'f16', seed = 1, nLayer = 2, nEmbd = 64, nHead = 4, nFf = 128, nCtxTrain = 2048, extraPieces = 300, name = 'tiny' } = options
  const nHeadKv = options.nHeadKv ?? nHead
  const headDim = nEmbd / nHead
  if (!Number.isInteger(headDim)) throw new Error(`nEmbd (${nEmbd}) must be a multiple of nHead (${nHead})`)
  const vocab = tinyVocab(extraPieces)
  const nVocab = vocab.tokens.length
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: name },
    'general.file_type': { type: 'u32', value: dtype === 'f16' ? 1 : 0 },
    'general.alignment': { type: 'u32', value: 32 },
    'llama.context_length': { type: 'u32', value: nCtxTrain },
    'llama.embedding_length': { type: 'u32', value: nEmbd },
    'llama.block_count': { type: 'u32', value: nLayer },
    'llama.feed_forward_length': { type: 'u32', value: nFf },
    'llama.attention.head_count': { type: 'u32', value: nHead },
    'llama.attention.head_count_kv': { type: 'u32', value: nHeadKv },
    'llama.rope.dimension_count': { type: 'u32', value: headDim },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: 1e-5 },
    'llama.rope.freq_base': { type: 'f32', value: 10000 },
    'llama.vocab_size': { type: 'u32', value: nVocab },
    'tokenizer.ggml.model': { type: 'string', value: 'llama' },
    'tokenizer.ggml.tokens': { type: 'string[]', value: vocab.tokens },
    'tokenizer.ggml.scores': { type: 'f32[]', value: vocab.scores },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: vocab.types },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: vocab.bos },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: vocab.eos },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: vocab.unk },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: vocab.unk },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: true },
    'tokenizer.ggml.add_eos_token': { type: 'bool', value: false },
    'tokenizer.chat_template': { type: 'string', value: CHAT_TEMPLATE },
  }
  const next = random(seed)
  const matrixType = dtype === 'f16' ? GgmlType.F16 : GgmlType.F32
  // Small weights keep activations and logits in a sane range, so sampling does not degenerate.
  const weights = (name: string, dims: number[], scale = 0.08): TensorSpec => ({
    name, dims, type: matrixType, fill: (out) => { for (let i = 0; i < out.length; i++) out[i] = (next() * 2 - 1) * scale },
  })
  const ones = (name: string, n: number): TensorSpec => ({ name, dims: [n], type: GgmlType.F32, fill: (out) => out.fill(1) })
  const nEmbdKv = headDim * nHeadKv
  const tensors: TensorSpec[] = [weights('token_embd.weight', [nEmbd, nVocab], 0.5), ones('output_norm.weight', nEmbd), weights('output.weight', [nEmbd, nVocab], 0.5)]
  for (let b = 0; b < nLayer; b++) {
    tensors.push(
      ones(`blk.${b}.attn_norm.weight`, nEmbd),
      weights(`blk.${b}.attn_q.weight`, [nEmbd, nEmbd]),
      weights(`blk.${b}.attn_k.weight`, [nEmbd, nEmbdKv]),
      weights(`blk.${b}.attn_v.weight`, [nEmbd, nEmbdKv]),
      weights(`blk.${b}.attn_output.weight`, [nEmbd, nEmbd]),
      ones(`blk.${b}.ffn_norm.weight`, nEmbd),
      weights(`blk.${b}.ffn_gate.weight`, [nEmbd, nFf]),
      weights(`blk.${b}.ffn_up.weight`, [nEmbd, nFf]),
      weights(`blk.${b}.ffn_down.weight`, [nFf, nEmbd]),
    )
  }
  const bytes = await writeGguf(file, metadata, tensors)
  return { file, bytes }
}
