import type { Priority } from '../../core/base/priority.js'
import type { Logger } from '../../core/base/logger.js'
import type { ResolvedOptions } from '../../core/config/request-options.js'
import type { RequestUsage } from '../../core/base/request-usage.js'
import type { ModelEndpoint } from '../../runtimes/index.js'

/**
 * What a model's runtime is started for: generation (chat, completions), embeddings, or reranking. A chat model
 * asked for embeddings gets an instance of its own, started to embed.
 */
export type Purpose = 'generate' | 'embed' | 'rerank'

/**
 * What a request asks of a model: a runtime's purpose, or decisions (System One, OpenAI's Decisions: answers read
 * from label logits), which run on the model's generating instance, a decision model's or a chat model's.
 */
export type AskPurpose = Purpose | 'decide'

/** What a model of `kind` is loaded for when nothing asks it anything (a preload, router mode's load). */
export function loadPurpose (kind: LeaseModel['kind']): Purpose {
  return kind === 'embedding' ? 'embed' : kind === 'reranker' ? 'rerank' : 'generate'
}

/** The runtime that serves what a request asks. */
export function runtimePurpose (asked: AskPurpose): Purpose {
  return asked === 'decide' ? 'generate' : asked
}

/** What a lease says of its model: a stored one's record, or an upstream's name with nothing of a GGUF known. */
export interface LeaseModel {
  /** `<owner>/<name>`, as stored (its canonical case), or the name an upstream's model is served under. */
  name: string
  format: string
  size: number
  digest?: string
  /** Options the model was created with: its own defaults, under config.yaml's per-model options. */
  parameters?: Record<string, unknown> | null
  /** A chat template the model was created with, instead of its GGUF's. */
  template?: string | null
  /** What it is, from its GGUF: a chat model generates; embedding models, rerankers and decision models only serve their endpoints. @default 'chat' */
  kind?: 'chat' | 'embedding' | 'reranker' | 'decision'
  /** What the GGUF says about its shape, when known: used to estimate the KV cache; what it is (/api/ps's details). */
  gguf?: { block_count?: number | null, embedding_length?: number | null, head_count?: number | null, head_count_kv?: number | null, context_length?: number | null, architecture?: string | null, parameter_count?: number | null, file_type?: string | null } | null
}

/** A slot on a loaded model, held for one request: all a surface needs to run it. */
export interface Lease {
  readonly model: LeaseModel
  /** Sampling options for the runtime (defaults < per-model < request). */
  readonly sampling: ResolvedOptions['sampling']
  /** Aborted when the client goes away or the model is stopped or dies (the reason says which), until `release()`. */
  readonly signal: AbortSignal
  /** Time spent waiting for a load and a slot. */
  readonly loadDurationMs: number
  /** Tokens one request may hold on this instance (its context per slot). */
  readonly contextLength: number
  /** The model's server, spoken to in llama-server's paths: its running llama-server, or an upstream's model. */
  readonly endpoint: ModelEndpoint
  /**
   * After the runtime refused the prompt as longer than `contextLength`: makes the model's later loads hold it (a
   * larger context, up to its trained one and the memory), unless the request fixed num_ctx. Release this lease and
   * acquire again to run on the larger context.
   */
  fitPrompt(promptTokens: number): Promise<FitResult>
  /** Gives the slot back; idempotent. */
  release(): void
  /** Says the first token went to the client (the time to first token); later calls do nothing. */
  firstToken(): void
  /**
   * Says how many tokens the runtime read (its whole prompt) and generated for this request; `cached`: of the
   * prompt's tokens, those it took from its cache (llama-server's `cache_n`). @default cached 0
   */
  countTokens(prompt: number, generated: number, cached?: number): void
  /**
   * Says `tokens` more of the answer went to the client (a streamed event each, as they go): what a request that ends
   * before its answer reports its counts is booked with (plugins/usage).
   */
  countSent(tokens: number): void
}

export interface AcquireRequest {
  /** The request's `options` object, as received: the scheduler resolves it (core/config/request-options.ts). */
  options?: Record<string, unknown>
  /** The surface's top-level fields that are options (OpenAI's `max_tokens`), named as options: they win over `options`. */
  overrides?: Record<string, unknown>
  /** The request's keep_alive in ms (Infinity = forever), if it set one. */
  keepAliveMs?: number
  /** Aborted when the client disconnects. */
  signal?: AbortSignal
  /** What the request does with the model. @default 'generate' */
  purpose?: AskPurpose
  /** Where option keys the gateway does not know are reported (the request's log). */
  log?: Pick<Logger, 'warn'>
  /**
   * Told where the request stands while it waits (for room to load, a load, a slot), at once and about every
   * second after; never called for a request that gets its slot without waiting (surfaces stream it as progress).
   */
  onWait?: (wait: WaitProgress) => void
  /**
   * The start of the request's conversation as text (plugins/inference/conversation-affinity.ts), read only where
   * several upstreams offer its model: the same conversation goes to the same one, whose prompt cache holds it.
   */
  affinity?: () => string
  /**
   * The session the request says it belongs to (plugins/inference/session-affinity.ts): its turns run on the runtime
   * slot that holds its cache while that slot is free (session-slots.ts), and go to the same upstream.
   */
  session?: string
  /** The request's usage record, which the lease fills (core/base/request-usage.ts); none for a preload. */
  usage?: RequestUsage
  /**
   * The priority class it asks for (OpenAI's `service_tier`, vLLM's `priority`); its credential caps it and gives
   * the class of one that asks none (plugins/scheduler/request-plan.ts `effectivePriority`).
   */
  priority?: Priority
  /**
   * Its answer streams from the runtime: while every slot is busy it may be sent on early, to wait in llama-server's
   * own queue. (One whose client leaves there is dropped at its first token; a whole answer would be generated to its
   * end, so it waits in the gateway's line.) @default false
   */
  streams?: boolean
  /**
   * Served by this gateway's own copy of the model, not by an upstream sharing it: every upstream it could go to
   * failed before any of its answer was sent (runLeased). @default false
   */
  here?: boolean
}

/**
 * Where a waiting request stands. `room`: its model waits for others to unload; `load`: its model's llama-server
 * is starting (`elapsedMs` of that load, `expectedMs` from earlier loads of the model; for `room`, the swap costs'
 * estimate of the rest of the wait); `queue`: in line for a slot,
 * `position` of `of` (`expectedMs`: wait-estimate.ts's guess from the model's recent requests). Estimates are absent
 * until there is something measured to base them on.
 */
export interface WaitProgress {
  stage: 'room' | 'load' | 'queue'
  model: string
  elapsedMs: number
  expectedMs?: number
  position?: number
  of?: number
}

/** What `Lease.fitPrompt` did: the context the next acquire gets, or the most this model can hold and why. */
export type FitResult = { grown: true, contextLength: number } | { grown: false, limit: number, why: string }

/** What a surface asks of a source of leases (the lease router, the scheduler, an upstream's leases). */
export interface LeaseSource {
  /** The stored name a request's model reaches (an alias's model). @throws InvalidModelNameError, ModelNotFoundError */
  modelName(name: string): string
  /** Loads the model if needed and waits for a slot. @throws ModelNotFoundError, QueueFullError, RuntimeError */
  acquire(name: string, request?: AcquireRequest): Promise<Lease>
  /** Whether `name` (as modelName gives it) is stored here, so that `acquire` with `here` can serve it. */
  storedHere?(name: string): boolean
}

/**
 * A model's line as a rule of a request's key sees it (the quotas' queue share, on the request's usage record): the
 * model, limits.queue_length, the requests of a key waiting in it, and about how long one request takes (ms).
 */
export interface QueueLine {
  readonly model: string
  readonly queueLength: number
  waitingOf(key: string): number
  oneRequestMs(): number
}
