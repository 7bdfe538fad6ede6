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
  /** Tokens read and generated, as the runtime's answers reported them (its leases add theirs). */
  promptTokens: number
  generatedTokens: number
  /** Whether a runtime's answer reported its counts (the two above); not for an answer cut short. */
  counted?: boolean
  /**
   * Tokens of a streamed answer sent to the client so far, counted as they go: what a request cut short is booked
   * with. Absent for a whole answer, of which nothing is seen before it is complete.
   */
  sentTokens?: number
  /** The most the answer may generate, as its key's daily limit reserved it (plugins/quotas). */
  tokenCap?: number
  /** The prompt's tokens as estimated at the door (plugins/quotas): what a request cut short is booked with. */
  promptEstimate?: number
  /**
   * Set by the quotas for a key with a daily token limit: reserves the request's tokens once its answer's cap is
   * known (max_tokens after every option layer, -1 for none, 0 for a request that generates nothing) and returns
   * the cap to generate with, lowered to what the key's day has left. @throws TooManyRequestsError
   */
  reserveTokens?: (maxTokens: number) => number
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
  /**
   * The prompt-cache group the request computes and reuses prompts in (plugins/security: its key's group, and the
   * request's own `cache_salt` within it); absent: the one group of a server without keys.
   */
  cacheGroup?: string
}

