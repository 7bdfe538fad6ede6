import { BadRequestError } from '../../core/base/errors.js'
import { priorityRank, type Priority, type PriorityRule } from '../../core/base/priority.js'
import { resolveOptions, type ResolvedOptions } from '../../core/config/request-options.js'
import { reserveTokens } from '../leases/lease-terms.js'
import type { ContextGrowth } from './context-growth.js'
import { runtimePurpose, type AcquireRequest, type AskPurpose, type Purpose } from '../leases/lease.js'
import type { SchedulableModel, SchedulerSettings } from './ports.js'
import type { SwapPolicy } from './swap-policy.js'

/** What one request asks of a stored model, worked out once before it looks for an instance. */
export interface RequestPlan {
  model: SchedulableModel
  purpose: Purpose
  resolved: ResolvedOptions
  /** A context grown for an earlier prompt of the model, which a smaller instance no longer serves (0: none). */
  minContext: number
  keepAliveMs: number | undefined
  /** The class it runs at: the one it asked for, within what its key allows (core/base/priority.ts). */
  priority: Priority
}

/**
 * The request's plan: its purpose checked, its options resolved once (core/config/request-options.ts, then the purpose's
 * caps), its key's daily tokens reserved (reserveTokens, below), its context at least the model's grown one, and its
 * keep-alive (a pinned model stays), and its class. @throws BadRequestError, TooManyRequestsError
 */
export function planRequest (model: SchedulableModel, request: AcquireRequest, deps: { settings: SchedulerSettings, growth: ContextGrowth, swaps: SwapPolicy }): RequestPlan {
  const { settings } = deps
  const asked = request.purpose ?? 'generate'
  checkPurpose(model, asked)
  const usage = request.usage
  const priority = effectivePriority(request.priority, usage?.key === undefined ? null : usage.priorityRule ?? {})
  const purpose = runtimePurpose(asked)
  let resolved = purposeOptions(model, purpose, resolveOptions({
    defaults: settings.defaultOptions,
    parameters: model.parameters,
    configured: settings.modelOptions.get(model.name)?.options,
    request: request.options,
    overrides: request.overrides,
  }))
  if (resolved.unknown.length > 0) request.log?.warn({ unknown: resolved.unknown }, 'ignoring unknown options')
  resolved = reserveTokens(resolved, request.usage, purpose === 'generate')
  const floor = purpose === 'generate' ? deps.growth.floorFor(model.name, resolved) : undefined
  if (floor) resolved.load = { ...resolved.load, num_ctx: floor.numCtx, num_parallel: floor.numParallel }
  // A pinned model stays: no request's keep_alive unloads it (an explicit unload, expire or stop, still does).
  const keepAliveMs = deps.swaps.isPinned(model.name) ? Infinity : request.keepAliveMs
  return { model, purpose, resolved, minContext: floor?.numCtx ?? 0, keepAliveMs, priority }
}

/**
 * The class a request runs at: the one it asked for (else its credential's default), no higher than its credential
 * allows. Without a credential (keys off) any class may be asked for: everyone on such a server is trusted alike.
 */
export function effectivePriority (asked: Priority | undefined, rule: PriorityRule | null): Priority {
  if (rule === null) return asked ?? 'interactive'
  const own = rule.default ?? 'interactive'
  const max = rule.max ?? (priorityRank(own) > priorityRank('interactive') ? own : 'interactive')
  const wanted = asked ?? own
  return priorityRank(wanted) > priorityRank(max) ? max : wanted
}

const ENDPOINTS: Record<AskPurpose, string> = {
  generate: 'chat or generate',
  embed: 'embeddings',
  rerank: 'reranking',
  decide: 'decisions',
}
const KIND_WORDS = { chat: 'a chat model', embedding: 'an embedding model', reranker: 'a reranker', decision: 'a decision model' } as const
const USE: Record<NonNullable<SchedulableModel['kind']>, string> = {
  chat: 'use /api/chat, /api/generate or /v1/chat/completions',
  embedding: 'use /api/embed or /v1/embeddings',
  reranker: 'use /v1/rerank',
  decision: 'ask it questions at /v1/systemone or /v1/decisions',
}
/** What each kind serves: a chat model all but reranking (embeddings on an instance of its own, decisions as vLLM answers them). */
const SERVES: Record<NonNullable<SchedulableModel['kind']>, readonly AskPurpose[]> = {
  chat: ['generate', 'embed', 'decide'],
  embedding: ['embed'],
  reranker: ['rerank'],
  decision: ['decide'],
}

/**
 * Refuses a request a model cannot serve, before anything loads: embedding models, rerankers and decision models
 * write no text, only rerankers rerank, a reranker's pooled output is a score, not an embedding, and a decision model
 * answers only questions. A chat model may embed (as in Ollama), on an instance of its own, and answer decisions.
 * @throws BadRequestError naming the model, what it is, and where to send it
 */
export function checkPurpose (model: SchedulableModel, purpose: AskPurpose): void {
  const kind = model.kind ?? 'chat'
  if (SERVES[kind].includes(purpose)) return
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
