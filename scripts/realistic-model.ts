import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gguf } from '@huggingface/gguf'
import { writeGguf, type GgufValue } from './gguf-writer.js'
import type { Tensor } from './tensor-data.js'
import { seededTensor } from './tiny-llama.js'

/**
 * Tiny random-weight models that behave like real ones where a gateway can tell: a real architecture
 * (qwen2: llama's blocks with biased q/k/v projections, tied embeddings), a real vocabulary and a real chat
 * template, both taken from llama.cpp's own source tree (`models/ggml-vocab-*.gguf`, `models/templates/*.jinja`).
 * llama-server then renders tools, builds grammars for JSON schemas and tool calls, and splits reasoning as
 * it does for the model the template came from. What the model says is noise; how it is framed is real.
 */
export interface RealisticModelOptions {
  /** Where to write the GGUF. */
  file: string
  /** A llama.cpp source tree (the one the runtime was built from). */
  llamaCppSrc: string
  /** The vocabulary: `models/ggml-vocab-<vocab>.gguf`. @default 'qwen2' */
  vocab?: string
  /** The chat template: `models/templates/<template>.jinja`. @default 'Qwen-Qwen2.5-7B-Instruct' */
  template?: string
  /** The end-of-generation token's text, as the instruct model's config sets it. @default '<|im_end|>' */
  eosToken?: string
  name?: string
  /** @default 1 */
  seed?: number
  /** @default 64 */
  nEmbd?: number
  /** @default 2 */
  nLayer?: number
  /** @default 4 */
  nHead?: number
  /** @default 2 */
  nHeadKv?: number
  /** @default 128 */
  nFf?: number
  /** @default 4096 */
  nCtxTrain?: number
}

const ARCH = 'qwen2'

export async function writeRealisticModel (options: RealisticModelOptions): Promise<{ file: string, bytes: number, vocabSize: number }> {
  const vocabName = options.vocab ?? 'qwen2'
  const templateName = options.template ?? 'Qwen-Qwen2.5-7B-Instruct'
  const models = join(options.llamaCppSrc, 'models')
  const { metadata } = await gguf(join(models, `ggml-vocab-${vocabName}.gguf`), { allowLocalFile: true }) as unknown as { metadata: Record<string, unknown> }
  const template = await readFile(join(models, 'templates', `${templateName}.jinja`), 'utf8')
  const tokens = metadata['tokenizer.ggml.tokens'] as string[]
  const eosText = options.eosToken ?? '<|im_end|>'
  const eos = tokens.indexOf(eosText)
  if (eos < 0) throw new Error(`the ${vocabName} vocabulary has no token ${JSON.stringify(eosText)}`)
  const nEmbd = options.nEmbd ?? 64
  const nLayer = options.nLayer ?? 2
  const nHead = options.nHead ?? 4
  const nHeadKv = options.nHeadKv ?? 2
  const nFf = options.nFf ?? 128
  const seed = options.seed ?? 1
  const kv: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: ARCH },
    'general.name': { type: 'string', value: options.name ?? `tiny ${templateName}` },
    'general.file_type': { type: 'u32', value: 1 },
    'general.alignment': { type: 'u32', value: 32 },
    [`${ARCH}.context_length`]: { type: 'u32', value: options.nCtxTrain ?? 4096 },
    [`${ARCH}.embedding_length`]: { type: 'u32', value: nEmbd },
    [`${ARCH}.block_count`]: { type: 'u32', value: nLayer },
    [`${ARCH}.feed_forward_length`]: { type: 'u32', value: nFf },
    [`${ARCH}.attention.head_count`]: { type: 'u32', value: nHead },
    [`${ARCH}.attention.head_count_kv`]: { type: 'u32', value: nHeadKv },
    [`${ARCH}.rope.freq_base`]: { type: 'f32', value: 1_000_000 },
    [`${ARCH}.attention.layer_norm_rms_epsilon`]: { type: 'f32', value: 1e-6 },
    'tokenizer.ggml.model': { type: 'string', value: metadata['tokenizer.ggml.model'] as string },
    'tokenizer.ggml.pre': { type: 'string', value: metadata['tokenizer.ggml.pre'] as string },
    'tokenizer.ggml.tokens': { type: 'string[]', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: (metadata['tokenizer.ggml.token_type'] as number[]).map(Number) },
    'tokenizer.ggml.merges': { type: 'string[]', value: metadata['tokenizer.ggml.merges'] as string[] },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: Number(metadata['tokenizer.ggml.padding_token_id'] ?? eos) },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: Number(metadata['tokenizer.ggml.bos_token_id'] ?? eos) },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: false },
    'tokenizer.chat_template': { type: 'string', value: template },
  }
  const headDim = nEmbd / nHead
  const kvWidth = headDim * nHeadKv
  const t = (name: string, shape: number[], scale?: number): Tensor => seededTensor(seed, name, shape, 'f16', scale)
  // Biases are added to f32 activations: ggml's CPU add takes no f16 operand there.
  const bias = (name: string, size: number): Tensor => seededTensor(seed, name, [size], 'f32', 0.02)
  // Small weights keep activations and logits in a sane range, so sampling does not degenerate. The output
  // projection is the embedding's (tied, as in the small Qwen models): no output.weight.
  const tensors: Tensor[] = [t('token_embd.weight', [tokens.length, nEmbd], 0.5)]
  for (let b = 0; b < nLayer; b++) {
    tensors.push(
      t(`blk.${b}.attn_norm.weight`, [nEmbd]),
      t(`blk.${b}.attn_q.weight`, [nEmbd, nEmbd], 0.08), bias(`blk.${b}.attn_q.bias`, nEmbd),
      t(`blk.${b}.attn_k.weight`, [kvWidth, nEmbd], 0.08), bias(`blk.${b}.attn_k.bias`, kvWidth),
      t(`blk.${b}.attn_v.weight`, [kvWidth, nEmbd], 0.08), bias(`blk.${b}.attn_v.bias`, kvWidth),
      t(`blk.${b}.attn_output.weight`, [nEmbd, nEmbd], 0.08),
      t(`blk.${b}.ffn_norm.weight`, [nEmbd]),
      t(`blk.${b}.ffn_gate.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_up.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_down.weight`, [nEmbd, nFf], 0.08),
    )
  }
  tensors.push(t('output_norm.weight', [nEmbd]))
  const bytes = await writeGguf(options.file, kv, tensors)
  return { file: options.file, bytes, vocabSize: tokens.length }
}
