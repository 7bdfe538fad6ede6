import { AsyncLocalStorage } from 'node:async_hooks'

/** What one request used of a model, for its access log line: filled by the lease it held, read when it ends. */
export interface RequestUsage {
  /** The model that answered (the stored name). */
  model?: string
  /** Milliseconds from asking for a slot to the first token sent. */
  firstTokenMs?: number
  promptTokens: number
  generatedTokens: number
  /** Of the prompt tokens, those the runtime took from its cache rather than evaluating. */
  cachedTokens?: number
  /** Milliseconds waiting for a load and a slot (summed over the leases it held). */
  queueMs?: number
  /** Milliseconds holding a slot on a runtime (summed over the leases it held). */
  runtimeMs?: number
  /** The name of the API key the request showed (plugins/security); absent when keys are off. */
  key?: string
  /** The key's `limits.queue_share` (plugins/quotas): the part of a model's queue its waiting requests may fill. */
  queueShare?: number
}

const storage = new AsyncLocalStorage<RequestUsage>()

/** Runs `fn` (a request's handling) with `usage` as the record its leases fill. */
export function runWithUsage<T> (usage: RequestUsage, fn: () => T): T {
  return storage.run(usage, fn)
}

/** The record of the request being handled, or undefined outside one (a preload, a test driving the scheduler). */
export function currentUsage (): RequestUsage | undefined {
  return storage.getStore()
}
