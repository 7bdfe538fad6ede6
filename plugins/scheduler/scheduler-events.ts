import type { Purpose } from '../leases/lease.js'

/** What the scheduler tells its observers (`scheduler.events`), by event name; models by their stored name (its leases' first tokens and tokens: plugins/leases/lease-events.ts). */
export interface SchedulerEvents {
  /** A model's runtime serves: `seconds` from its spawn to ready (not the wait for room or a conversion). */
  loaded: [model: string, purpose: Purpose, seconds: number]
  /** A model's runtime failed to start (a start cut short by a stop is not a failure). */
  loadFailed: [model: string, purpose: Purpose, error: unknown]
  /** An idle model was unloaded to make room for `forModel`. */
  evicted: [model: string, forModel: string]
  /** A busy model takes no new requests: `forModel` waited limits.swap_wait for it, and it goes once idle (swap-policy.ts). */
  swapOut: [model: string, forModel: string]
  /** A loaded model's runtime exited without being asked to. */
  crashed: [model: string]
}
