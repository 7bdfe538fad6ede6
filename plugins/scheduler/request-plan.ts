import { resolveOptions, type ResolvedOptions } from '../../core/request-options.js'
import type { RequestUsage } from '../../core/request-usage.js'
import type { ContextGrowth } from './context-growth.js'
import type { AcquireRequest, Purpose } from './lease.js'
import type { SchedulableModel, SchedulerSettings } from './ports.js'
import { checkPurpose, purposeOptions } from './purpose.js'
import type { SwapPolicy } from './swap-policy.js'

/** What one request asks of a stored model, worked out once before it looks for an instance. */
export interface RequestPlan {
  model: SchedulableModel
  purpose: Purpose
  resolved: ResolvedOptions
  /** A context grown for an earlier prompt of the model, which a smaller instance no longer serves (0: none). */
  minContext: number
  keepAliveMs: number | undefined
}

/**
 * The request's plan: its purpose checked, its options resolved once (core/request-options.ts, then the purpose's
 * caps), its key's daily tokens reserved (token-reservation.ts), its context at least the model's grown one, and its
 * keep-alive (a pinned model stays). @throws BadRequestError, TooManyRequestsError
 */
export function planRequest (model: SchedulableModel, request: AcquireRequest, deps: { settings: SchedulerSettings, growth: ContextGrowth, swaps: SwapPolicy }): RequestPlan {
  const { settings } = deps
  const purpose = request.purpose ?? 'generate'
  checkPurpose(model, purpose)
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
  return { model, purpose, resolved, minContext: floor?.numCtx ?? 0, keepAliveMs }
}

/**
 * A key's daily tokens, reserved now that the request's cap is known (core/request-usage.ts `reserveTokens`, set by
 * the quotas): the answer may generate at most what the key's day has left, so that requests running side by side
 * cannot pass the limit together. `generates`: false for embeddings and reranking, which reserve their prompt only.
 * @throws TooManyRequestsError from the quotas
 */
export function reserveTokens (resolved: ResolvedOptions, usage: RequestUsage | undefined, generates: boolean): ResolvedOptions {
  const reserve = usage?.reserveTokens
  if (reserve === undefined) return resolved
  const asked = generates ? resolved.sampling.max_tokens ?? -1 : 0
  const cap = reserve(asked)
  if (!generates || (asked !== -1 && asked <= cap)) return resolved
  return { ...resolved, sampling: { ...resolved.sampling, max_tokens: cap } }
}
