import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, rm } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { writeTinyBert } from '../../scripts/fixtures/realistic-bert.js'
import { CHAT_FORMATS, TINY_HYBRID } from '../../scripts/fixtures/realistic-architectures/chat-formats.js'
import { writeRealisticModel, type RealisticModelOptions } from '../../scripts/fixtures/realistic-model.js'
import { writeTinyProjector } from '../../scripts/fixtures/realistic-projector.js'
import { writeTinyAudioProjector } from '../../scripts/fixtures/realistic-audio-projector.js'
import { decisionMetadata } from '../../scripts/fixtures/decision-fixtures.js'
import { cpuRuntime } from './runtime.js'

/** The chat fixtures the tests use: a real vocabulary and template from the runtime's own llama.cpp tree. */
export const REALISTIC = {
  /** Qwen2.5-Instruct's template: tools (Hermes-style <tool_call>), JSON schemas. */
  qwen25: { vocab: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct', eosToken: '<|im_end|>' },
  /** DeepSeek-R1-Distill-Qwen's template: the answer opens with <think>, so what follows is reasoning. */
  r1: { vocab: 'qwen2', template: 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B', eosToken: '<|endoftext|>' },
  /** Qwen3's template: thinking on by default, off with `enable_thinking: false` (an empty think block). */
  qwen3: { vocab: 'qwen2', template: 'Qwen-Qwen3-0.6B', eosToken: '<|im_end|>' },
  /**
   * Qwen2.5 steered to call a tool: it opens `<tool_call>` and a newline at once (llama-server's grammar then
   * writes a call to one of the request's tools), and ends its turn after `</tool_call>`. Without tools it
   * writes those tags as text.
   */
  caller: {
    vocab: 'qwen2',
    template: 'Qwen-Qwen2.5-7B-Instruct',
    eosToken: '<|im_end|>',
    addedTokens: ['<tool_call>', '</tool_call>'],
    steering: { '*': ['<tool_call>', '</tool_call>'], '<tool_call>': 'Ċ', '</tool_call>': '<|im_end|>' },
  },
  /**
   * Qwen2.5 steered through an agent's loop, trained on 32768 tokens of context. With tools and no tool result
   * it calls a tool as `caller` does (the call's strings and optional parts left empty, so any schema closes at
   * once) and ends its turn; once a `<tool_response>` is in the conversation, and without tools, it answers
   * "Done" and ends its turn. The prompt's last token is the same in all three (the newline after
   * `<|im_start|>assistant`): attention to markers earlier in the prompt tells them apart. The tools marker
   * is `<tool_call>`, which Qwen2.5's template writes into the system prompt with the tools.
   */
  agent: {
    vocab: 'qwen2',
    template: 'Qwen-Qwen2.5-7B-Instruct',
    eosToken: '<|im_end|>',
    nCtxTrain: 32_768,
    // One layer: the switches are all in the first, and the agents' long prompts are the most attention the suite
    // computes (a second, random layer doubled it).
    nLayer: 1,
    // A turn's "Done" leads its <tool_call> fallback by about 6 (not 3): out of sampling's reach at temperature 1.
    steeringGain: 2,
    addedTokens: ['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'],
    // After the newline that opens a turn, "Done" just ahead of <tool_call>: the tools switch tips it over.
    steering: { 'Ċ': ['Done', '<tool_call>'], '<tool_call>': 'Ċ', '</tool_call>': '<|im_end|>', Done: '<|im_end|>' },
    switches: [
      // Inside a call: close a string, then an array or object, then the call; ahead of <tool_call>, which a
      // JSON string would take as text.
      { marker: '<tool_call>', next: ['"', '}', ']', '</tool_call>', '<tool_call>', '{'], strength: 0.75 },
      // Above the tools switch; below the rules for the token just before (after "Done", the end of turn).
      { marker: '<tool_response>', next: 'Done', strength: 0.75 },
    ],
  },
  /**
   * Qwen2.5-Coder: Qwen2.5's template, and its fill-in-the-middle tokens marked as such in the GGUF. Steered to
   * fill any gap with " return" and end there: the token after `<|fim_middle|>`, so an answer of " return" says
   * the prompt was framed by the FIM tokens (llama-server's /infill ends it with that one).
   */
  coder: {
    vocab: 'qwen2',
    template: 'Qwen-Qwen2.5-7B-Instruct',
    eosToken: '<|im_end|>',
    fim: true,
    steering: { '<|fim_middle|>': 'Ġreturn', 'Ġreturn': '<|im_end|>' },
  },
  /**
   * The architectures whose memory llama-server cannot roll back token by token, so that it keeps context
   * checkpoints (and loses them with a slot saved to disk and restored): Qwen3.5's hybrid of Gated DeltaNet and
   * full attention, LFM2's of short convolutions and attention, Gemma 3's and Gemma 4's sliding windows of 256
   * tokens beside global layers. Four layers each, the fourth the global one; trained on 65536 tokens. Each
   * answers "Done" and ends its turn (scripts/fixtures/realistic-architectures/index.ts: CHAT_FORMATS, TINY_HYBRID).
   */
  /**
   * Decision models on Qwen2.5's vocabulary (scripts/fixtures/decision-fixtures.ts): openjev letters its options
   * itself, with temperatures by bucket (a FLOAT32 and a string, both as llama.cpp reads them); lev is given each
   * option's label, reads a choice both ways round and a noul as a 0-8 rating.
   */
  openjev: {
    vocab: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct', eosToken: '<|im_end|>',
    metadata: decisionMetadata('qwen2', { type: 'openjev', temperatures: { 'choice.3_5': 1.5, choice: '1.25', noul: 0.75, 'score.3_5': 2 } }),
  },
  lev: {
    vocab: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct', eosToken: '<|im_end|>',
    metadata: decisionMetadata('qwen2', { type: 'lev', temperatures: { 'choice.small': 1.75, noul: 0.5 } }),
  },
  /** LiquidAI's d1 (lfm2-d1): LFM2 in Qwen2's vocabulary, each option read at a group of label forms. Not steered. */
  d1: {
    architecture: 'lfm2', vocab: 'qwen2', template: 'LFM2.5-Instruct', eosToken: '<|im_end|>', ...TINY_HYBRID,
    metadata: decisionMetadata('lfm2', { type: 'lfm2-d1', temperatures: { 'choice.3_5': 1.5, noul: 0.75, score: 1.25 } }),
  },
  qwen35: { ...CHAT_FORMATS.qwen35, ...TINY_HYBRID },
  lfm2: { ...CHAT_FORMATS.lfm2, ...TINY_HYBRID },
  gemma3: { ...CHAT_FORMATS.gemma3, ...TINY_HYBRID },
  gemma4: { ...CHAT_FORMATS.gemma4, ...TINY_HYBRID },
} satisfies Record<string, Omit<RealisticModelOptions, 'file' | 'llamaCppSrc'>>

/** Every fixture: the chat models above, a BERT embedder and reranker (bge's vocabulary), a vision and an audio projector. */
export type FixtureKind = keyof typeof REALISTIC | 'bert' | 'reranker' | 'projector' | 'audioProjector'

/** The width of the chat fixtures (realistic-model.ts's default n_embd): the projector must match it. */
const CHAT_EMBD = 64

const WRITERS: Record<FixtureKind, (file: string, llamaCppSrc: string) => Promise<unknown>> = {
  qwen25: (file, src) => writeRealisticModel({ ...REALISTIC.qwen25, file, llamaCppSrc: src, name: 'tiny qwen25' }),
  r1: (file, src) => writeRealisticModel({ ...REALISTIC.r1, file, llamaCppSrc: src, name: 'tiny r1' }),
  caller: (file, src) => writeRealisticModel({ ...REALISTIC.caller, file, llamaCppSrc: src, name: 'tiny tool caller' }),
  qwen3: (file, src) => writeRealisticModel({ ...REALISTIC.qwen3, file, llamaCppSrc: src, name: 'tiny qwen3' }),
  agent: (file, src) => writeRealisticModel({ ...REALISTIC.agent, file, llamaCppSrc: src, name: 'tiny agent' }),
  coder: (file, src) => writeRealisticModel({ ...REALISTIC.coder, file, llamaCppSrc: src, name: 'tiny qwen25 coder' }),
  openjev: (file, src) => writeRealisticModel({ ...REALISTIC.openjev, file, llamaCppSrc: src, name: 'tiny openjev' }),
  lev: (file, src) => writeRealisticModel({ ...REALISTIC.lev, file, llamaCppSrc: src, name: 'tiny lev' }),
  d1: (file, src) => writeRealisticModel({ ...REALISTIC.d1, file, llamaCppSrc: src, name: 'tiny d1' }),
  qwen35: (file, src) => writeRealisticModel({ ...REALISTIC.qwen35, file, llamaCppSrc: src, name: 'tiny qwen35' }),
  lfm2: (file, src) => writeRealisticModel({ ...REALISTIC.lfm2, file, llamaCppSrc: src, name: 'tiny lfm2' }),
  gemma3: (file, src) => writeRealisticModel({ ...REALISTIC.gemma3, file, llamaCppSrc: src, name: 'tiny gemma3' }),
  gemma4: (file, src) => writeRealisticModel({ ...REALISTIC.gemma4, file, llamaCppSrc: src, name: 'tiny gemma4' }),
  bert: (file, src) => writeTinyBert({ file, llamaCppSrc: src, kind: 'embedding', name: 'tiny bert' }),
  reranker: (file, src) => writeTinyBert({ file, llamaCppSrc: src, kind: 'reranker', name: 'tiny reranker' }),
  projector: (file) => writeTinyProjector({ file, textEmbd: CHAT_EMBD, name: 'tiny projector' }),
  audioProjector: (file) => writeTinyAudioProjector({ file, textEmbd: CHAT_EMBD, name: 'tiny audio projector' }),
}
// Bumped when a writer changes what it writes, so that cached fixtures are made again.
const GENERATOR = { qwen25: 2, r1: 2, caller: 1, qwen3: 1, agent: 1, coder: 1, openjev: 1, lev: 1, d1: 1, qwen35: 1, lfm2: 1, gemma3: 1, gemma4: 1, bert: 1, reranker: 1, projector: 1, audioProjector: 1 } satisfies Record<FixtureKind, number>

const made = new Map<FixtureKind, Promise<string>>()

/** The llama.cpp tree the test runtime was built from (its models/ folder has the vocabularies and templates), and its commit. */
export async function runtimeSource (): Promise<{ source: string, commit?: string }> {
  const runtime = await cpuRuntime()
  const info = JSON.parse(await readFile(join(runtime.binDir, '..', 'build-info.json'), 'utf8')) as { source?: string, commit?: string }
  if (!info.source || !existsSync(join(info.source, 'models'))) {
    throw new Error(`the runtime at ${runtime.binDir} does not say which llama.cpp tree it was built from (build-info.json "source"), or that tree is gone: the realistic fixtures are made from its models/ folder`)
  }
  return { source: info.source, ...(info.commit !== undefined ? { commit: info.commit } : {}) }
}

/** A tiny fixture's GGUF by kind, made and kept as keptFixture says (once per process asked). */
export function realisticModel (kind: FixtureKind): Promise<string> {
  let file = made.get(kind)
  if (file === undefined) {
    const options = kind in REALISTIC ? REALISTIC[kind as keyof typeof REALISTIC] : {}
    file = keptFixture(kind, (commit) => ({ options, commit, generator: GENERATOR[kind] }), WRITERS[kind])
    made.set(kind, file)
  }
  return file
}

/**
 * A fixture's GGUF, made once per machine, source tree and `recipe` (its hash names the file) and kept under
 * ~/.llamagate/test-fixtures (up to about 40 MB each, the Gemma ones 70 MB with their vocabulary of 262144 tokens,
 * out of the clone). Written to a temporary name and renamed, so that a test run killed mid-write leaves nothing
 * half-made for the next one.
 */
export async function keptFixture (name: string, recipe: (commit: string | undefined) => unknown, write: (file: string, llamaCppSrc: string) => Promise<unknown>): Promise<string> {
  const info = await runtimeSource()
  const key = createHash('sha256').update(JSON.stringify(recipe(info.commit))).digest('hex').slice(0, 12)
  const dir = join(process.env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'test-fixtures')
  const target = join(dir, `${name}-${key}.gguf`)
  if (existsSync(target)) return target
  await mkdir(dir, { recursive: true })
  const partial = `${target}.tmp-${process.pid}`
  try {
    await write(partial, info.source)
    await rename(partial, target)
  } finally {
    await rm(partial, { force: true })
  }
  return target
}
