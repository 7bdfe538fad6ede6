/** What the prompt cache tells its observers (`promptCache.events`), by event name; models by their stored name. */
export interface PromptCacheEvents {
  /** A slot's prompt cache was saved before its runtime stopped, or restored into a fresh one: its tokens and bytes. */
  saved: [model: string, tokens: number, bytes: number]
  restored: [model: string, tokens: number, bytes: number]
  /**
   * Each restore, judged once: its slot's first request reused what it shared with the save (`tokens` not evaluated
   * again), or did not (missed, with the reason), or the runtime stopped before a request took the slot (unused: the
   * `tokens` restored).
   */
  reused: [model: string, tokens: number]
  missed: [model: string, reason: string]
  unused: [model: string, tokens: number]
}
