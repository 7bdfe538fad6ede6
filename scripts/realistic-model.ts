import { writeGguf, type GgufValue } from './gguf-writer.js'
import { ARCHITECTURES, type Architecture, type Dims, type Weights } from './realistic-architectures/index.js'
import { steeredEmbedding, steeredOutput, tiedSteeredEmbedding } from './realistic-steering.js'
import { markedEmbedding, switchAttention, type Switch } from './realistic-switches.js'
import { readRealisticVocab } from './realistic-vocab.js'
import type { Tensor } from './tensor-data.js'
import { seededTensor } from './tiny-llama.js'

export type { Switch } from './realistic-switches.js'

/**
 * Tiny random-weight models that behave like real ones where a gateway can tell: a real architecture
 * (qwen2: llama's blocks with biased q/k/v projections, tied embeddings; or one of the others below), a real
 * vocabulary and a real chat template, both taken from llama.cpp's own source tree (`models/ggml-vocab-*.gguf`,
 * `models/templates/*.jinja`). llama-server then renders tools, builds grammars for JSON schemas and tool calls,
 * and splits reasoning as it does for the model the template came from, and keeps the memory (KV cache,
 * recurrent state, context checkpoints) it keeps for the real architecture. What the model says is noise; how it
 * is framed is real.
 */
export interface RealisticModelOptions {
  /**
   * `qwen2` (llama's blocks with biased q/k/v projections), `llama` (no biases: Llama 3's shape, with its rope
   * base), or one whose memory llama-server cannot roll back token by token: the hybrids `qwen35` (Gated
   * DeltaNet) and `lfm2` (short convolutions), the sliding-window `gemma3` and `gemma4`
   * (scripts/realistic-architectures/). @default 'qwen2'
   */
  architecture?: Architecture
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
  /**
   * Attention head size (gemma4: of the global layers; its windowed ones take half). Only the newer
   * architectures take one other than nEmbd / nHead. @default nEmbd / nHead
   */
  headDim?: number
  /** @default 128 */
  nFf?: number
  /** @default 4096 */
  nCtxTrain?: number
  /** How many tokens back a sliding-window layer sees (gemma3, gemma4). @default 256 */
  slidingWindow?: number
  /** In qwen35, lfm2, gemma3 and gemma4, every how many layers one attends to the whole context. @default 4 */
  globalEvery?: number
  /** qwen35's Gated DeltaNet heads. @default { keyHeads: nHeadKv, valueHeads: nHead, headDim } */
  linear?: { keyHeads: number, valueHeads: number, headDim: number }
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
   * Special tokens the instruct model added, written over the vocabulary's padding or unused slots as control
   * tokens (the template writes them; they are never printed): Gemma 3's turn markers, which the Gemma 4
   * vocabulary in llama.cpp's tree lacks.
   */
  controlTokens?: string[]
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
  /**
   * A token the model says after every token, steered through its tied embedding, so that no output.weight is
   * added (`steering` adds one of the vocabulary's size): for the bench's shapes, which keep their real size. A
   * random model otherwise repeats the prompt's last token, which is whitespace after a thinking template's
   * `<think>\n`, and llama-server's parser holds whitespace back: a stream with no text at all.
   */
  tiedSteering?: string
  /**
   * The token embedding's scale (0.5 unless said). Gemma multiplies its input embedding by √n_embd, so at 0.5 a
   * real-size Gemma's residual stream is the last token's embedding and nothing else, and its tied output names
   * that token with probability 1: no logprob tells two states apart. Its trained embedding is about 0.5/√n_embd.
   */
  embeddingScale?: number
  /**
   * Qwen2.5-Coder's fill-in-the-middle tokens (`<|fim_prefix|>`, `<|fim_middle|>`, `<|fim_suffix|>`, `<|fim_pad|>`,
   * `<|repo_name|>`, `<|file_sep|>`), which the qwen2 vocabulary in llama.cpp's tree lacks: written over its free
   * slots as control tokens, the first three also named by `tokenizer.ggml.fim_{pre,mid,suf}_token_id` as
   * convert_hf_to_gguf.py writes them (llama.cpp finds the other three by their text).
   */
  fim?: boolean
}

/** Qwen2.5-Coder's added tokens, in its tokenizer's order. */
const QWEN_FIM = ['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>']

export async function writeRealisticModel (options: RealisticModelOptions): Promise<{ file: string, bytes: number, vocabSize: number }> {
  const templateName = options.template ?? 'Qwen-Qwen2.5-7B-Instruct'
  const vocab = await readRealisticVocab({
    llamaCppSrc: options.llamaCppSrc, vocab: options.vocab ?? 'qwen2', template: templateName, eosToken: options.eosToken ?? '<|im_end|>',
    addedTokens: options.addedTokens ?? [], controlTokens: [...options.controlTokens ?? [], ...options.fim === true ? QWEN_FIM : []],
  })
  const { tokens, id } = vocab
  const d = dims(options)
  const writer = ARCHITECTURES[d.arch]
  const seed = options.seed ?? 1
  const kv: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: d.arch },
    'general.name': { type: 'string', value: options.name ?? `tiny ${templateName}` },
    'general.file_type': { type: 'u32', value: 1 },
    'general.alignment': { type: 'u32', value: 32 },
    ...writer.hparams(d),
    ...vocab.keys,
    ...(options.fim === true
      ? {
          'tokenizer.ggml.fim_pre_token_id': { type: 'u32', value: id('<|fim_prefix|>') },
          'tokenizer.ggml.fim_suf_token_id': { type: 'u32', value: id('<|fim_suffix|>') },
          'tokenizer.ggml.fim_mid_token_id': { type: 'u32', value: id('<|fim_middle|>') },
        }
      : {}),
  }
  // Small weights keep activations and logits in a sane range, so sampling does not degenerate.
  const weights: Weights = {
    matrix: (name, shape, scale = 0.08) => seededTensor(seed, name, shape, 'f16', scale),
    random32: (name, shape, scale) => seededTensor(seed, name, shape, 'f32', scale),
    filled: (name, shape, value = 1) => ({ name, shape, dtype: 'f32', fillRows: (_first, out) => out.fill(value) }),
  }
  const steering = Object.entries(options.steering ?? {}).map(([before, next]) => ({ before: before === '*' ? null : id(before), next: [next].flat().map(id) }))
  const switches = (options.switches ?? []).map((s, i) => ({
    marker: id(s.marker), next: [s.next].flat().map(id), strength: s.strength,
    // After the steering rules' directions; the markers' from the other end, clear of them all.
    direction: steering.length + 1 + i, markerDirection: d.nEmbd - 1 - i,
  }))
  if (switches.length > 0 && d.arch !== 'qwen2') throw new Error('switches need the query bias of the qwen2 architecture')
  if (switches.length > d.nHeadKv) throw new Error(`at most ${d.nHeadKv} switches (one key/value head each)`)
  if (steering.length + 2 * switches.length >= d.nEmbd) throw new Error(`at most ${d.nEmbd - 1} directions for ${d.nEmbd} dimensions: each steering rule takes one, each switch two`)
  const rules = [...steering, ...switches]
  if (options.tiedSteering !== undefined && rules.length > 0) throw new Error('tiedSteering is for a model without steering or switches (those untie the output)')
  const random = weights.matrix('token_embd.weight', [tokens.length, d.nEmbd], options.embeddingScale ?? 0.5)
  const marked = switches.length === 0 ? random : markedEmbedding(random, switches)
  const embedding = options.tiedSteering !== undefined
    ? tiedSteeredEmbedding(random, id(options.tiedSteering))
    : steering.length === 0 ? marked : steeredEmbedding(marked, steering)
  // The first layer's attention, where switches take it, in place of the random one.
  const switched = new Map(switches.length === 0 ? [] : switchAttention(switches, { embedding, nHead: d.nHead, nHeadKv: d.nHeadKv, headDim: d.headDim }).map((t) => [t.name, t]))
  const tensors: Tensor[] = [embedding, ...(writer.globals?.(d, weights) ?? [])]
  for (let b = 0; b < d.nLayer; b++) tensors.push(...writer.block(d, b, weights).map((t) => switched.get(t.name) ?? t))
  tensors.push(weights.filled(writer.outputNorm ?? 'output_norm.weight', [d.nEmbd]))
  // Without rules the output projection is the embedding's (tied, as in the small Qwen models): no output.weight.
  if (rules.length > 0) tensors.push(steeredOutput(weights.matrix('output.weight', [tokens.length, d.nEmbd], 0.5), rules, options.steeringGain ?? 1))
  const bytes = await writeGguf(options.file, kv, tensors)
  return { file: options.file, bytes, vocabSize: tokens.length }
}

/** The sizes, defaults filled in, and checked against what the architecture's blocks need. */
function dims (o: RealisticModelOptions): Dims {
  const arch = o.architecture ?? 'qwen2'
  if (!(arch in ARCHITECTURES)) throw new Error(`unknown architecture ${JSON.stringify(arch)}: one of ${Object.keys(ARCHITECTURES).join(', ')}`)
  const nEmbd = o.nEmbd ?? 64
  const nHead = o.nHead ?? 4
  const nHeadKv = o.nHeadKv ?? 2
  const headDim = o.headDim ?? nEmbd / nHead
  // llama's blocks and lfm2's project the hidden state to the heads and back with square matrices.
  const square = arch === 'qwen2' || arch === 'llama' || arch === 'lfm2'
  if (square && headDim * nHead !== nEmbd) throw new Error(`${arch} needs headDim × nHead = nEmbd (${headDim} × ${nHead} ≠ ${nEmbd})`)
  // Rope turns pairs; gemma4's windowed heads are half as wide, qwen35 turns a quarter of each.
  const quantum = arch === 'gemma4' ? 4 : arch === 'qwen35' ? 8 : 2
  if (!Number.isInteger(headDim) || headDim % quantum !== 0) throw new Error(`${arch} needs a head size that is a multiple of ${quantum}, not ${headDim}`)
  if (nHead % nHeadKv !== 0) throw new Error(`nHeadKv (${nHeadKv}) must divide nHead (${nHead})`)
  return {
    arch, nEmbd, nHead, nHeadKv, headDim,
    nLayer: o.nLayer ?? 2,
    nFf: o.nFf ?? 128,
    nCtxTrain: o.nCtxTrain ?? 4096,
    slidingWindow: o.slidingWindow ?? 256,
    globalEvery: o.globalEvery ?? 4,
    linear: o.linear ?? { keyHeads: nHeadKv, valueHeads: nHead, headDim },
  }
}
