/**
 * What one request used of a model, for its access log line: filled by the lease it held, read when it ends. It goes
 * with the request (`request.usage`, plugins/access-log) and with its ask for a slot (AcquireRequest's `usage`), by
 * hand rather than through an AsyncLocalStorage, whose hooks on every promise cost ~10% of a relayed request's CPU.
 */
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

