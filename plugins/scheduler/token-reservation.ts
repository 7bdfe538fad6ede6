import type { ResolvedOptions } from '../../core/request-options.js'
import type { RequestUsage } from '../../core/request-usage.js'

/**
 * A key's daily tokens, reserved now that the request's cap is known (the usage record's `reserveTokens`, set by
 * plugins/quotas/quota-gate.ts): the answer may generate at most what the key's day has left, so that requests running side by side
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
