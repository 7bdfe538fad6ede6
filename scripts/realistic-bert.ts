import { join } from 'node:path'
import { readGgufHeader } from '../core/gguf-header.js'
import { writeGguf, type GgufValue } from './gguf-writer.js'
import type { Tensor } from './tensor-data.js'
import { seededTensor } from './tiny-llama.js'

/**
 * Tiny random-weight BERT models that llama-server serves as it serves real ones: an embedding model (for
 * `--embeddings`) and a cross-encoder reranker (for `--reranking`), with the real architecture (`bert`:
 * learned positions, post-norm blocks, GELU feed-forward, no KV cache) and the real WordPiece vocabulary of
 * bge (`models/ggml-vocab-bert-bge.gguf` from llama.cpp's own source tree), so tokenization, [CLS]/[SEP]
 * framing, pooling, normalization and the rerank prompt are llama.cpp's own. What the vectors and scores say
 * is noise; their shape, count and framing are real.
 */
export interface TinyBertOptions {
  /** Where to write the GGUF. */
  file: string
  /** A llama.cpp source tree (the one the runtime was built from). */
  llamaCppSrc: string
  /**
   * `embedding`: pooled sentence vectors (`bert.pooling_type` CLS, as bge); `reranker`: the same body plus the
   * classification head llama.cpp applies for rank pooling (`cls.*`, `cls.output.*`), one score per pair.
   */
  kind: 'embedding' | 'reranker'
  /** @default 1 */
  seed?: number
  /** @default 64 */
  nEmbd?: number
  /** @default 2 */
  nLayer?: number
  /** @default 4 */
  nHead?: number
  /** @default 128 */
  nFf?: number
  /** Rows of the learned position table, i.e. the longest input the model can take. @default 512 */
  nCtxTrain?: number
  /** Embedding models only: `cls` (as bge) or `mean` (as MiniLM). @default 'cls' */
  pooling?: 'cls' | 'mean'
  name?: string
}

export interface TinyBert {
  file: string
  bytes: number
  vocabSize: number
  nEmbd: number
  /** [CLS], which llama.cpp adds first (as BOS) and pools on. */
  clsId: number
  /** [SEP], which llama.cpp adds last, and between query and document when reranking. */
  sepId: number
}

const ARCH = 'bert'

// llama_pooling_type in include/llama.h.
const POOLING = { mean: 1, cls: 2, rank: 4 } as const

export async function writeTinyBert (options: TinyBertOptions): Promise<TinyBert> {
  const vocabFile = join(options.llamaCppSrc, 'models', 'ggml-vocab-bert-bge.gguf')
  const { metadata } = await readGgufHeader(vocabFile)
  const tokens = metadata['tokenizer.ggml.tokens'] as string[]
  const id = (key: string): number => {
    const value = metadata[`tokenizer.ggml.${key}`]
    if (value === undefined) throw new Error(`${vocabFile} has no tokenizer.ggml.${key}`)
    return Number(value)
  }
  const clsId = id('cls_token_id')
  const sepId = id('seperator_token_id') // sic: llama.cpp's spelling
  const nEmbd = options.nEmbd ?? 64
  const nLayer = options.nLayer ?? 2
  const nHead = options.nHead ?? 4
  const nFf = options.nFf ?? 128
  const nCtxTrain = options.nCtxTrain ?? 512
  const seed = options.seed ?? 1
  if (nEmbd % nHead !== 0) throw new Error(`nEmbd (${nEmbd}) must be a multiple of nHead (${nHead})`)
  const nTokenTypes = Number(metadata['tokenizer.ggml.token_type_count'] ?? 2)
  const pooling = options.kind === 'reranker' ? POOLING.rank : POOLING[options.pooling ?? 'cls']
  const kv: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: ARCH },
    'general.name': { type: 'string', value: options.name ?? `tiny bert ${options.kind}` },
    'general.file_type': { type: 'u32', value: 1 },
    'general.alignment': { type: 'u32', value: 32 },
    [`${ARCH}.context_length`]: { type: 'u32', value: nCtxTrain },
    [`${ARCH}.embedding_length`]: { type: 'u32', value: nEmbd },
    [`${ARCH}.block_count`]: { type: 'u32', value: nLayer },
    [`${ARCH}.feed_forward_length`]: { type: 'u32', value: nFf },
    [`${ARCH}.attention.head_count`]: { type: 'u32', value: nHead },
    [`${ARCH}.attention.layer_norm_epsilon`]: { type: 'f32', value: 1e-12 },
    // Bidirectional attention; with no KV cache, llama-server then embeds an input in one ubatch.
    [`${ARCH}.attention.causal`]: { type: 'bool', value: false },
    [`${ARCH}.pooling_type`]: { type: 'u32', value: pooling },
    // The vocabulary as the converter writes it for bge. token_type_count is required: llama.cpp refuses a
    // bert model without it ("bert model needs to define token type count"), and it sizes token_types.weight.
    'tokenizer.ggml.model': { type: 'string', value: metadata['tokenizer.ggml.model'] as string },
    'tokenizer.ggml.pre': { type: 'string', value: metadata['tokenizer.ggml.pre'] as string },
    'tokenizer.ggml.tokens': { type: 'string[]', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: (metadata['tokenizer.ggml.token_type'] as number[]).map(Number) },
    'tokenizer.ggml.token_type_count': { type: 'u32', value: nTokenTypes },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: id('unknown_token_id') },
    'tokenizer.ggml.seperator_token_id': { type: 'u32', value: sepId },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: id('padding_token_id') },
    'tokenizer.ggml.cls_token_id': { type: 'u32', value: clsId },
    'tokenizer.ggml.mask_token_id': { type: 'u32', value: id('mask_token_id') },
  }
  const t = (name: string, shape: number[], scale?: number): Tensor => seededTensor(seed, name, shape, 'f16', scale)
  // Everything 1-D is added to f32 activations, where ggml's CPU add takes no f16 operand ("binary_op:
  // unsupported types: dst: f32, src0: f32, src1: f16"): f32 throughout. So is token_types.weight, whose first
  // row is added as a view (as the converter keeps it).
  const vec = (name: string, size: number, scale = 0.02): Tensor => seededTensor(seed, name, [size], 'f32', scale)
  const norm = (prefix: string): Tensor[] => [seededTensor(seed, `${prefix}.weight`, [nEmbd], 'f32'), vec(`${prefix}.bias`, nEmbd)]
  // Each block ends in a layer norm, so activations stay in range whatever the scales; small projections
  // keep the attention softmax and GELU away from saturation all the same.
  const tensors: Tensor[] = [
    t('token_embd.weight', [tokens.length, nEmbd], 0.5),
    seededTensor(seed, 'token_types.weight', [nTokenTypes, nEmbd], 'f32', 0.1),
    t('position_embd.weight', [nCtxTrain, nEmbd], 0.1),
    ...norm('token_embd_norm'),
  ]
  for (let b = 0; b < nLayer; b++) {
    tensors.push(
      t(`blk.${b}.attn_q.weight`, [nEmbd, nEmbd], 0.08), vec(`blk.${b}.attn_q.bias`, nEmbd),
      t(`blk.${b}.attn_k.weight`, [nEmbd, nEmbd], 0.08), vec(`blk.${b}.attn_k.bias`, nEmbd),
      t(`blk.${b}.attn_v.weight`, [nEmbd, nEmbd], 0.08), vec(`blk.${b}.attn_v.bias`, nEmbd),
      t(`blk.${b}.attn_output.weight`, [nEmbd, nEmbd], 0.08), vec(`blk.${b}.attn_output.bias`, nEmbd),
      ...norm(`blk.${b}.attn_output_norm`),
      t(`blk.${b}.ffn_up.weight`, [nFf, nEmbd], 0.08), vec(`blk.${b}.ffn_up.bias`, nFf),
      t(`blk.${b}.ffn_down.weight`, [nEmbd, nFf], 0.08), vec(`blk.${b}.ffn_down.bias`, nEmbd),
      ...norm(`blk.${b}.layer_output_norm`),
    )
  }
  if (options.kind === 'reranker') {
    // The sequence-classification head of a BERT cross-encoder (bge-reranker): tanh(cls · h[CLS] + b), then
    // one logit (no classifier.output_labels: n_cls_out stays 1), which llama-server answers as the score.
    tensors.push(
      t('cls.weight', [nEmbd, nEmbd], 0.2), vec('cls.bias', nEmbd),
      t('cls.output.weight', [1, nEmbd], 0.5), vec('cls.output.bias', 1),
    )
  }
  const bytes = await writeGguf(options.file, kv, tensors)
  return { file: options.file, bytes, vocabSize: tokens.length, nEmbd, clsId, sepId }
}
