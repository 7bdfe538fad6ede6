import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readGgufHeader } from '../core/gguf-header.js'
import type { GgufValue } from './gguf-writer.js'

/** A vocabulary and chat template from llama.cpp's tree, as the realistic writer puts them into a model. */
export interface RealisticVocab {
  tokens: string[]
  /** The `tokenizer.*` keys, in the order they are written. */
  keys: Record<string, GgufValue>
  /** A token's id by its text; an error naming the vocabulary where it has none. */
  id: (text: string) => number
}

export interface RealisticVocabOptions {
  llamaCppSrc: string
  /** `models/ggml-vocab-<vocab>.gguf` */
  vocab: string
  /** `models/templates/<template>.jinja` */
  template: string
  eosToken: string
  /** Written over padding or unused slots as user-defined tokens (matched whole, printed as text). */
  addedTokens: string[]
  /** Written over padding or unused slots as control tokens (matched whole where the template writes them, never printed). */
  controlTokens: string[]
}

// llama.cpp's token types.
const CONTROL = 3
const USER_DEFINED = 4

/** A slot a vocabulary keeps free for tokens a fine-tune adds: Qwen's `[PAD151646]`, Gemma's `<unused0>`. */
const FREE_SLOT = /^(\[PAD\d+\]|<unused\d+>)$/

export async function readRealisticVocab (o: RealisticVocabOptions): Promise<RealisticVocab> {
  const models = join(o.llamaCppSrc, 'models')
  const { metadata } = await readGgufHeader(join(models, `ggml-vocab-${o.vocab}.gguf`))
  const template = await readFile(join(models, 'templates', `${o.template}.jinja`), 'utf8')
  const tokens = [...metadata['tokenizer.ggml.tokens'] as string[]]
  const types = (metadata['tokenizer.ggml.token_type'] as number[]).map(Number)
  const free = freeSlots(tokens)
  const add = (texts: string[], type: number): void => {
    for (const text of texts) {
      if (tokens.includes(text)) continue
      const slot = free.next()
      if (slot.done) throw new Error(`the ${o.vocab} vocabulary has no free slot left for ${JSON.stringify(text)}`)
      tokens[slot.value] = text
      types[slot.value] = type
    }
  }
  add(o.addedTokens, USER_DEFINED)
  add(o.controlTokens, CONTROL)
  const id = (text: string): number => {
    const found = tokens.indexOf(text)
    if (found < 0) throw new Error(`the ${o.vocab} vocabulary has no token ${JSON.stringify(text)}`)
    return found
  }
  const eos = id(o.eosToken)
  // What the vocabulary file has beside its tokens, where it has it: Gemma 4's has no pre-tokenizer name (its
  // tokenizer model implies one) but scores and an unknown token; Qwen's and Llama's have neither.
  const optional = (key: string, value: (v: unknown) => GgufValue): Record<string, GgufValue> =>
    metadata[key] === undefined ? {} : { [key]: value(metadata[key]) }
  const keys: Record<string, GgufValue> = {
    'tokenizer.ggml.model': { type: 'string', value: metadata['tokenizer.ggml.model'] as string },
    ...optional('tokenizer.ggml.pre', (v) => ({ type: 'string', value: v as string })),
    'tokenizer.ggml.tokens': { type: 'string[]', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: types },
    ...optional('tokenizer.ggml.scores', (v) => ({ type: 'f32[]', value: (v as number[]).map(Number) })),
    ...optional('tokenizer.ggml.merges', (v) => ({ type: 'string[]', value: v as string[] })),
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: Number(metadata['tokenizer.ggml.padding_token_id'] ?? eos) },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: Number(metadata['tokenizer.ggml.bos_token_id'] ?? eos) },
    ...optional('tokenizer.ggml.unknown_token_id', (v) => ({ type: 'u32', value: Number(v) })),
    // The templates write the BOS themselves where the model wants one.
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: false },
    'tokenizer.chat_template': { type: 'string', value: template },
  }
  return { tokens, keys, id }
}

function * freeSlots (tokens: string[]): Generator<number> {
  for (let slot = 0; slot < tokens.length; slot++) if (FREE_SLOT.test(tokens[slot]!)) yield slot
}
