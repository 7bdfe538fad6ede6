import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readGgufHeader } from '../core/gguf-header.js'
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
  /**
   * Rules that hold wherever a marker token stands anywhere before, whatever the token just before: what the
   * model says next (`next`, with fallbacks, as in `steering`) once a tool's result is in the conversation, or
   * once tools were offered. Each takes a key/value head of the first layer (at most `nHeadKv` switches) whose
   * query is one constant, from the query bias (so qwen2 only), and whose key sees only the marker, so that
   * every later position attends to the marker wherever it stands. `strength` is the pull relative to a
   * `steering` rule's: below 1, the rule for the token just before wins where both name a token.
   */
  switches?: Switch[]
  /**
   * How far the steered tokens' logits stand above the rest and apart from each other (a fallback's gap too):
   * a multiple of the output rows' pull. At 1 a fallback is about 3 below the token before it, which sampling
   * at temperature 1 may still pick now and then. @default 1
   */
  steeringGain?: number
}

/** See {@link RealisticModelOptions.switches}. */
export interface Switch {
  /** The marker token's text, as the vocabulary spells it (add it with `addedTokens` if it is missing). */
  marker: string
  next: string | string[]
  strength: number
}

export async function writeRealisticModel (options: RealisticModelOptions): Promise<{ file: string, bytes: number, vocabSize: number }> {
  const vocabName = options.vocab ?? 'qwen2'
  const templateName = options.template ?? 'Qwen-Qwen2.5-7B-Instruct'
  const models = join(options.llamaCppSrc, 'models')
  const { metadata } = await readGgufHeader(join(models, `ggml-vocab-${vocabName}.gguf`))
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
  const switches = (options.switches ?? []).map((s, i) => ({
    marker: id(s.marker), next: [s.next].flat().map(id), strength: s.strength,
    // After the steering rules' directions; the markers' from the other end, clear of them all.
    direction: steering.length + 1 + i, markerDirection: nEmbd - 1 - i,
  }))
  if (switches.length > 0 && !biased) throw new Error('switches need the query bias of the qwen2 architecture')
  if (switches.length > nHeadKv) throw new Error(`at most ${nHeadKv} switches (one key/value head each)`)
  if (steering.length + 2 * switches.length >= nEmbd) throw new Error(`at most ${nEmbd - 1} directions for ${nEmbd} dimensions: each steering rule takes one, each switch two`)
  const rules = [...steering, ...switches]
  const random = t('token_embd.weight', [tokens.length, nEmbd], 0.5)
  const marked = switches.length === 0 ? random : markedEmbedding(random, switches)
  const embedding = steering.length === 0 ? marked : steeredEmbedding(marked, steering)
  const tensors: Tensor[] = [embedding]
  for (let b = 0; b < nLayer; b++) {
    tensors.push(t(`blk.${b}.attn_norm.weight`, [nEmbd]))
    if (b === 0 && switches.length > 0) {
      tensors.push(...switchAttention(switches, { embedding, nHead, nHeadKv, headDim }))
    } else {
      tensors.push(
        t(`blk.${b}.attn_q.weight`, [nEmbd, nEmbd], 0.08), ...biases(`blk.${b}.attn_q.bias`, nEmbd),
        t(`blk.${b}.attn_k.weight`, [kvWidth, nEmbd], 0.08), ...biases(`blk.${b}.attn_k.bias`, kvWidth),
        t(`blk.${b}.attn_v.weight`, [kvWidth, nEmbd], 0.08), ...biases(`blk.${b}.attn_v.bias`, kvWidth),
        t(`blk.${b}.attn_output.weight`, [nEmbd, nEmbd], 0.08),
      )
    }
    tensors.push(
      t(`blk.${b}.ffn_norm.weight`, [nEmbd]),
      t(`blk.${b}.ffn_gate.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_up.weight`, [nFf, nEmbd], 0.08),
      t(`blk.${b}.ffn_down.weight`, [nEmbd, nFf], 0.08),
    )
  }
  tensors.push(t('output_norm.weight', [nEmbd]))
  if (rules.length > 0) tensors.push(steeredOutput(t('output.weight', [tokens.length, nEmbd], 0.5), rules, options.steeringGain ?? 1))
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

function steeredOutput (output: Tensor, steering: Array<{ next: number[] }>, gain: number): Tensor {
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

/** A switch as writeRealisticModel resolves it: token ids, and the Hadamard rows of its two directions. */
interface ResolvedSwitch { marker: number, next: number[], strength: number, direction: number, markerDirection: number }

// A marker's embedding gets one Hadamard row of its own (norm 8), and every other embedding loses what its random
// part had along it: a switch head's key and value read that row alone, so they are exactly zero away from markers.
const MARK = 1

function markedEmbedding (embedding: Tensor, switches: ResolvedSwitch[]): Tensor {
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
function switchAttention (switches: ResolvedSwitch[], m: { embedding: Tensor, nHead: number, nHeadKv: number, headDim: number }): Tensor[] {
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
