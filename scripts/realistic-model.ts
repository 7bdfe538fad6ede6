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
  /**
   * `qwen2` (llama's blocks with biased q/k/v projections) or `llama` (no biases: Llama 3's shape, with its
   * rope base). @default 'qwen2'
   */
  architecture?: 'qwen2' | 'llama'
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
  /**
   * What the model says next, by the token before it (`*`: after any other token), wherever its grammar lets
   * it; a list names fallbacks for when a grammar forbids the ones before. The texts as the vocabulary spells
   * them (`Ċ` is a newline). Random weights never call a tool on their own; steered to Qwen2.5's `<tool_call>`
   * and a newline, the model sets off a real llama-server's lazy tool-call grammar, which writes the call, and
   * with the end of turn as the fallback it stops where the grammar first lets it. Adds an untied output.weight
   * of the vocabulary's size.
   */
  steering?: Record<string, string | string[]>
  /**
   * Tokens the instruct model added to the base vocabulary, written over its unused padding slots: Qwen2.5's
   * `<tool_call>` and `</tool_call>`, which the qwen2 vocabulary in llama.cpp's tree lacks.
   */
  addedTokens?: string[]
}

export async function writeRealisticModel (options: RealisticModelOptions): Promise<{ file: string, bytes: number, vocabSize: number }> {
  const vocabName = options.vocab ?? 'qwen2'
  const templateName = options.template ?? 'Qwen-Qwen2.5-7B-Instruct'
  const models = join(options.llamaCppSrc, 'models')
  const { metadata } = await gguf(join(models, `ggml-vocab-${vocabName}.gguf`), { allowLocalFile: true }) as unknown as { metadata: Record<string, unknown> }
  const template = await readFile(join(models, 'templates', `${templateName}.jinja`), 'utf8')
  const tokens = [...metadata['tokenizer.ggml.tokens'] as string[]]
  const tokenTypes = (metadata['tokenizer.ggml.token_type'] as number[]).map(Number)
  addTokens(tokens, tokenTypes, options.addedTokens ?? [], vocabName)
  const eosText = options.eosToken ?? '<|im_end|>'
  const eos = tokens.indexOf(eosText)
  if (eos < 0) throw new Error(`the ${vocabName} vocabulary has no token ${JSON.stringify(eosText)}`)
  const nEmbd = options.nEmbd ?? 64
  const nLayer = options.nLayer ?? 2
  const nHead = options.nHead ?? 4
  const nHeadKv = options.nHeadKv ?? 2
  const nFf = options.nFf ?? 128
  const seed = options.seed ?? 1
  const arch = options.architecture ?? 'qwen2'
  const biased = arch === 'qwen2'
  const kv: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: arch },
    'general.name': { type: 'string', value: options.name ?? `tiny ${templateName}` },
    'general.file_type': { type: 'u32', value: 1 },
    'general.alignment': { type: 'u32', value: 32 },
    [`${arch}.context_length`]: { type: 'u32', value: options.nCtxTrain ?? 4096 },
    [`${arch}.embedding_length`]: { type: 'u32', value: nEmbd },
    [`${arch}.block_count`]: { type: 'u32', value: nLayer },
    [`${arch}.feed_forward_length`]: { type: 'u32', value: nFf },
    [`${arch}.attention.head_count`]: { type: 'u32', value: nHead },
    [`${arch}.attention.head_count_kv`]: { type: 'u32', value: nHeadKv },
    [`${arch}.rope.freq_base`]: { type: 'f32', value: biased ? 1_000_000 : 500_000 },
    [`${arch}.attention.layer_norm_rms_epsilon`]: { type: 'f32', value: 1e-6 },
    'tokenizer.ggml.model': { type: 'string', value: metadata['tokenizer.ggml.model'] as string },
    'tokenizer.ggml.pre': { type: 'string', value: metadata['tokenizer.ggml.pre'] as string },
    'tokenizer.ggml.tokens': { type: 'string[]', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: tokenTypes },
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
  const biases = (name: string, size: number): Tensor[] => biased ? [seededTensor(seed, name, [size], 'f32', 0.02)] : []
  // Small weights keep activations and logits in a sane range, so sampling does not degenerate. The output
  // projection is the embedding's (tied, as in the small Qwen models): no output.weight.
  const id = (text: string): number => {
    const found = tokens.indexOf(text)
    if (found < 0) throw new Error(`the ${vocabName} vocabulary has no token ${JSON.stringify(text)}`)
    return found
  }
  const steering = Object.entries(options.steering ?? {}).map(([before, next]) => ({ before: before === '*' ? null : id(before), next: [next].flat().map(id) }))
  const embedding = t('token_embd.weight', [tokens.length, nEmbd], 0.5)
  const tensors: Tensor[] = [steering.length === 0 ? embedding : steeredEmbedding(embedding, steering)]
  for (let b = 0; b < nLayer; b++) {
    tensors.push(
      t(`blk.${b}.attn_norm.weight`, [nEmbd]),
      t(`blk.${b}.attn_q.weight`, [nEmbd, nEmbd], 0.08), ...biases(`blk.${b}.attn_q.bias`, nEmbd),
      t(`blk.${b}.attn_k.weight`, [kvWidth, nEmbd], 0.08), ...biases(`blk.${b}.attn_k.bias`, kvWidth),
      t(`blk.${b}.attn_v.weight`, [kvWidth, nEmbd], 0.08), ...biases(`blk.${b}.attn_v.bias`, kvWidth),
      t(`blk.${b}.attn_output.weight`, [nEmbd, nEmbd], 0.08),
      t(`blk.${b}.ffn_norm.weight`, [nEmbd]),
      t(`blk.${b}.ffn_gate.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_up.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_down.weight`, [nEmbd, nFf], 0.08),
    )
  }
  tensors.push(t('output_norm.weight', [nEmbd]))
  if (steering.length > 0) tensors.push(steeredOutput(t('output.weight', [tokens.length, nEmbd], 0.5), steering))
  const bytes = await writeGguf(options.file, kv, tensors)
  return { file: options.file, bytes, vocabSize: tokens.length }
}

// llama.cpp's token types: what the tokenizer matches whole in any text and prints back as its text.
const USER_DEFINED = 4

function addTokens (tokens: string[], types: number[], added: string[], vocabName: string): void {
  let slot = 0
  for (const text of added) {
    if (tokens.includes(text)) continue
    while (slot < tokens.length && !/^\[PAD\d+\]$/.test(tokens[slot]!)) slot++
    if (slot === tokens.length) throw new Error(`the ${vocabName} vocabulary has no padding slot left for ${JSON.stringify(text)}`)
    tokens[slot] = text
    types[slot] = USER_DEFINED
  }
}

// Each token's embedding gets a large direction (norm 16 against the random rest's 2.3) naming the token to say
// after it. The residual stream keeps it, so the last hidden state points along it, and the output row of the
// token it names points along it too: a logit near 32 (64 dimensions) far above the random rows' (spread about
// 2.3). The directions are rows of a Hadamard matrix (entries ±1, mutually orthogonal), the all-ones row left out.
const STEER = 2

/** After `before` (null: any other token), `next[0]`, else `next[1]` where a grammar forbids it, and so on. */
interface Steer { before: number | null, next: number[] }

function hadamard (row: number, column: number): number {
  let bits = row & column
  let parity = 0
  while (bits) { parity ^= bits & 1; bits >>>= 1 }
  return parity ? -1 : 1
}

/** One direction per steering rule (Hadamard rows 1, 2, ...), and the output rows that point along each. */
function directions (steering: Steer[], width: number): Array<{ row: number, token: number, strength: number }> {
  if (steering.length >= width) throw new Error(`at most ${width - 1} steering rules for ${width} dimensions`)
  // Each fallback a logit about 3 below the one before it: far enough to lose, near enough to win where it may.
  return steering.flatMap((s, i) => s.next.map((token, k) => ({ row: i + 1, token, strength: 0.5 - 0.05 * k })))
}

function steeredEmbedding (embedding: Tensor, steering: Steer[]): Tensor {
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

function steeredOutput (output: Tensor, steering: Steer[]): Tensor {
  const width = output.shape.at(-1)!
  const rows = directions(steering, width)
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
