import { BadRequestError } from '../../core/base/errors.js'
import { tokenCount } from '../../runtimes/index.js'
import type { Lease } from '../leases/lease.js'
import { checkFinite } from './vectors.js'

/** One input: text, or token ids as OpenAI's API allows. */
export type EmbedInput = string | number[]

export interface EmbedSettings {
  /** Cut inputs longer than the context (Ollama's default) instead of refusing them. */
  truncate: boolean
  /** L2-normalized vectors (`/api/embed`, `/v1/embeddings`), or the raw pooled ones (the legacy `/api/embeddings`). */
  normalize: boolean
}

export interface Embeddings {
  vectors: number[][]
  /** Tokens evaluated, over all inputs (after truncation). */
  promptTokens: number
}

interface RuntimeEmbeddings { data: Array<{ index: number, embedding: number[] }>, usage?: { prompt_tokens?: number } }

/**
 * Embeds inputs on a leased embedding instance. Each text is tokenized first as llama-server's embedding path
 * does it (special tokens added), so that one longer than the context is cut or refused here with its index,
 * rather than failing the whole batch inside the runtime; then one request carries every input, and
 * llama-server spreads them over the instance's slots.
 * @throws BadRequestError (an empty input, one too long with truncate off)
 */
export async function embedInputs (lease: Lease, inputs: EmbedInput[], settings: EmbedSettings): Promise<Embeddings> {
  if (lease.model.format === 'remote') return embedRemote(lease, inputs, settings)
  const limit = lease.contextLength
  const tokens = await Promise.all(inputs.map((input) => typeof input === 'string' ? tokenize(lease, input) : input))
  let closing: number | null | undefined
  for (const [i, ids] of tokens.entries()) {
    if (ids.length === 0) throw new BadRequestError(`input ${i} is empty: there is nothing to embed`, 'empty_input')
    if (ids.length <= limit) continue
    if (!settings.truncate) {
      throw new BadRequestError(`the input length exceeds the context length: input ${i} is ${ids.length} tokens, the context holds ${limit}; shorten it, or allow truncate`, 'input_too_long')
    }
    closing ??= await closingToken(lease)
    tokens[i] = cut(ids, limit, closing)
  }
  const answer = await lease.endpoint.postJson<RuntimeEmbeddings>('/v1/embeddings', {
    input: tokens,
    // llama-server's own switch: 2 is the Euclidean norm, -1 none.
    embd_normalize: settings.normalize ? 2 : -1,
  }, lease.signal)
  const vectors = [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding)
  checkFinite(vectors, lease.model.name)
  const promptTokens = tokenCount(answer.usage?.prompt_tokens, 'usage.prompt_tokens') ?? tokens.reduce((sum, ids) => sum + ids.length, 0)
  lease.countTokens(promptTokens, 0)
  return { vectors, promptTokens }
}

/**
 * Embeds inputs on an upstream's model: its context is not known here and it has no `/tokenize` (another llamagate,
 * Ollama, an OpenAI engine), so the inputs go as they are and the upstream cuts or refuses a long one by its own
 * context, as `truncate` says where it takes that setting (a llamagate and Ollama do).
 * @throws BadRequestError (an empty input)
 */
async function embedRemote (lease: Lease, inputs: EmbedInput[], settings: EmbedSettings): Promise<Embeddings> {
  const empty = inputs.findIndex((input) => input.length === 0)
  if (empty !== -1) throw new BadRequestError(`input ${empty} is empty: there is nothing to embed`, 'empty_input')
  const answer = await lease.endpoint.postJson<RuntimeEmbeddings>('/v1/embeddings', {
    input: inputs, embd_normalize: settings.normalize ? 2 : -1, truncate: settings.truncate,
  }, lease.signal)
  const vectors = [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding)
  checkFinite(vectors, lease.model.name)
  const promptTokens = tokenCount(answer.usage?.prompt_tokens, 'usage.prompt_tokens') ?? 0
  lease.countTokens(promptTokens, 0)
  return { vectors, promptTokens }
}

async function tokenize (lease: Lease, content: string): Promise<number[]> {
  const { tokens } = await lease.endpoint.postJson<{ tokens: number[] }>('/tokenize', { content, add_special: true, parse_special: true }, lease.signal)
  return tokens
}

/**
 * The token the model's tokenizer closes every input with (BERT's [SEP], an EOS where the GGUF asks for one),
 * or null when it adds none: an empty text tokenized with special tokens is just the opening and closing ones.
 */
async function closingToken (lease: Lease): Promise<number | null> {
  const special = await tokenize(lease, '')
  return special.at(-1) ?? null
}

/** The first tokens that fit, keeping the closing token where the input ends with it (the encoder pools on it). */
function cut (ids: number[], limit: number, closing: number | null): number[] {
  if (closing !== null && ids.at(-1) === closing) return [...ids.slice(0, limit - 1), closing]
  return ids.slice(0, limit)
}
