import { join } from 'node:path'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import type { ModelRecord } from '../storage/model-record.js'

/** A model's fill-in-the-middle tokens: what llama-server's `/infill` frames a prefix and a suffix with. */
export interface FimTokens { prefix: number, suffix: number, middle: number }

// The GGUF keys convert_hf_to_gguf.py writes (Qwen2.5-Coder, StarCoder2, CodeLlama...), then the older ones.
const KEYS = {
  prefix: ['tokenizer.ggml.fim_pre_token_id', 'tokenizer.ggml.prefix_token_id'],
  suffix: ['tokenizer.ggml.fim_suf_token_id', 'tokenizer.ggml.suffix_token_id'],
  middle: ['tokenizer.ggml.fim_mid_token_id', 'tokenizer.ggml.middle_token_id'],
} as const

// Where the keys are missing llama.cpp finds the tokens by their text (src/llama-vocab.cpp): the same texts here,
// so that the gateway and the runtime agree on which models fill in the middle.
const TEXTS = {
  prefix: ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>'],
  suffix: ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>'],
  middle: ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>'],
} as const

type Part = keyof FimTokens
const PARTS: Part[] = ['prefix', 'suffix', 'middle']

/**
 * The FIM tokens a GGUF's metadata names, by key or (with the vocabulary read, `tokenizer.ggml.tokens`) by text;
 * null unless it has all three. The keys win over the texts, as in llama.cpp.
 */
export function fimTokensOf (metadata: Record<string, unknown>): FimTokens | null {
  const tokens = Array.isArray(metadata['tokenizer.ggml.tokens']) ? metadata['tokenizer.ggml.tokens'] as unknown[] : []
  const found: Partial<FimTokens> = {}
  for (const part of PARTS) {
    const key = KEYS[part].find((k) => isId(metadata[k]))
    if (key !== undefined) found[part] = Number(metadata[key])
    else {
      const at = tokens.findIndex((t) => (TEXTS[part] as readonly unknown[]).includes(t))
      if (at !== -1) found[part] = at
    }
  }
  return PARTS.every((p) => found[p] !== undefined) ? found as FimTokens : null
}

function isId (value: unknown): boolean {
  return (typeof value === 'number' && Number.isInteger(value) && value >= 0) || (typeof value === 'bigint' && value >= 0n)
}

// A model's files never change under the same digest: each is read once.
const known = new Map<string, Promise<FimTokens | null>>()

/**
 * A stored model's FIM tokens, or null when it has none (an upstream's model: none known here). The header is read
 * without its arrays first (most FIM models name them by key); only without keys is the vocabulary read, once.
 */
export function modelFimTokens (record: ModelRecord): Promise<FimTokens | null> {
  const file = record.manifest.primary ?? record.manifest.variants[0]?.file
  if (record.upstream !== undefined || file === undefined || record.dir === '') return Promise.resolve(null)
  const path = join(record.dir, file)
  const cacheKey = `${record.digest}:${path}`
  let tokens = known.get(cacheKey)
  if (tokens === undefined) {
    tokens = (async () => {
      const keyed = fimTokensOf((await readGgufHeader(path, { maxArrayLength: 0 })).metadata)
      return keyed ?? fimTokensOf((await readGgufHeader(path)).metadata)
    })()
    // A file that could not be read is not remembered: the next request tries again.
    tokens.catch(() => known.delete(cacheKey))
    known.set(cacheKey, tokens)
  }
  return tokens
}
