import { BadRequestError } from '../../core/errors.js'
import type { ResolvedOptions } from '../../core/request-options.js'
import type { Purpose } from './lease.js'
import type { RuntimeSpawnOptions, SchedulableModel } from './ports.js'

const ENDPOINTS: Record<Purpose, string> = {
  generate: 'chat or generate',
  embed: 'embeddings',
  rerank: 'reranking',
}
const KIND_WORDS = { chat: 'a chat model', embedding: 'an embedding model', reranker: 'a reranker' } as const
const USE: Record<NonNullable<SchedulableModel['kind']>, string> = {
  chat: 'use /api/chat, /api/generate or /v1/chat/completions',
  embedding: 'use /api/embed or /v1/embeddings',
  reranker: 'use /v1/rerank',
}

/**
 * Refuses a request a model cannot serve, before anything loads: embedding models and rerankers generate no
 * text, only rerankers rerank, and a reranker's pooled output is a score, not an embedding. A chat model may
 * embed (as in Ollama), on an instance of its own.
 * @throws BadRequestError naming the model, what it is, and where to send it
 */
export function checkPurpose (model: SchedulableModel, purpose: Purpose): void {
  const kind = model.kind ?? 'chat'
  const serves = kind === 'chat' ? purpose !== 'rerank' : (kind === 'embedding' ? purpose === 'embed' : purpose === 'rerank')
  if (serves) return
  const hint = purpose === 'rerank' ? 'rerank with a reranker (a GGUF with rank pooling)' : USE[kind]
  throw new BadRequestError(`"${model.name}" does not support ${ENDPOINTS[purpose]}: it is ${KIND_WORDS[kind]}; ${hint}`, 'unsupported_by_model')
}

/**
 * The load options of an instance for a purpose: embeddings and reranking read a whole input in one pass of an
 * encoder, which cannot look past the context it was trained with, so num_ctx is capped there (as Ollama caps it).
 */
export function purposeOptions (model: SchedulableModel, purpose: Purpose, resolved: ResolvedOptions): ResolvedOptions {
  const trained = model.gguf?.context_length
  if (purpose === 'generate' || !trained) return resolved
  const cap = (n: number | undefined): number | undefined => n === undefined ? undefined : Math.min(n, trained)
  const requested = cap(resolved.loadRequested.num_ctx)
  return {
    ...resolved,
    load: { ...resolved.load, num_ctx: cap(resolved.load.num_ctx)! },
    loadRequested: requested === undefined ? resolved.loadRequested : { ...resolved.loadRequested, num_ctx: requested },
  }
}

/**
 * What llama-server needs to serve a purpose: `--mmproj` for a model with a vision projector; for embeddings and
 * reranking their switch, and a physical batch as large as one slot's context, since an input to an encoder
 * must fit in one batch. A chat model embeds by its last token, as decoder-based embedders do and Ollama does.
 */
export function purposeFlags (model: SchedulableModel, purpose: Purpose, numCtx: number, projectorPath: string | null): Partial<RuntimeSpawnOptions> {
  switch (purpose) {
    case 'generate': return projectorPath !== null ? { projectorPath } : {}
    case 'embed': return { embeddings: true, batchSize: numCtx, ...((model.kind ?? 'chat') === 'chat' ? { pooling: 'last' as const } : {}) }
    case 'rerank': return { reranking: true, batchSize: numCtx }
  }
}
