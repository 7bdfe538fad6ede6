import type { Priority, PriorityRule } from './priority.js'

/**
 * What one request used of a model, for its access log line: filled by the lease it held, read when it ends. It goes
 * with the request (`request.usage`, plugins/access-log) and with its ask for a slot (AcquireRequest's `usage`), by
 * hand rather than through an AsyncLocalStorage, whose hooks on every promise cost ~10% of a relayed request's CPU.
 *
 * It holds what every request's lease fills in; a plugin that marks requests adds its own fields by declaration
 * merging, beside the code that sets them (the key and its cache group: plugins/security/request-guard.ts; a key's
 * limits: plugins/quotas/quota-gate.ts).
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
  /** Of the prompt tokens, those the runtime took from its cache rather than evaluating. */
  cachedTokens?: number
  /** Milliseconds waiting for a load and a slot (summed over the leases it held). */
  queueMs?: number
  /** Milliseconds holding a slot on a runtime (summed over the leases it held). */
  runtimeMs?: number
  /**
   * What its credential allows of priority classes (core/base/priority.ts), set by whoever authenticated it: absent
   * for a request without one (keys off), which may ask for any class.
   */
  priorityRule?: PriorityRule
  /** The class it ran at, once it asked for a slot. */
  priority?: Priority
}
