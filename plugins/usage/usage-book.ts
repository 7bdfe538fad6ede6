/**
 * What the usage plugin keeps per API key and model (the interface other plugins read; the implementation is
 * in this folder). Keys are the key's name, never its secret; `anonymous` when keys are off.
 */
export interface UsageTotals {
  requests: number
  prompt_tokens: number
  cached_tokens: number
  generated_tokens: number
  queue_ms: number
  runtime_ms: number
}

export interface UsageBook {
  /** Prompt plus generated tokens `key` used since 00:00 UTC today (kept across restarts). */
  tokensToday(key: string): number
}
