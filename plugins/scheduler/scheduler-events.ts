import type { Purpose } from '../leases/lease.js'
import type { SwapReason } from './swap-costs.js'

/** What the scheduler tells its observers (`scheduler.events`), by event name; models by their stored name (its leases' first tokens and tokens: plugins/leases/lease-events.ts). */
export interface SchedulerEvents {
  /**
   * A model's runtime serves: `seconds` from its spawn to ready (not the wait for room or a conversion); for a start
   * `prepared` while it waited for room, from the moment it had room.
   */
  loaded: [model: string, purpose: Purpose, seconds: number, prepared: boolean]
  /** A model's runtime failed to start (a start cut short by a stop is not a failure). */
  loadFailed: [model: string, purpose: Purpose, error: unknown]
  /** An idle model was unloaded to make room for `forModel`, and why (swap-costs.ts). */
  evicted: [model: string, forModel: string, reason: SwapReason]
  /** A busy model takes no new requests: `forModel` waited for it as long as the costs allow, and it goes once idle (swap-costs.ts). */
  swapOut: [model: string, forModel: string, reason: SwapReason]
  /** A loaded model's runtime exited without being asked to. */
  crashed: [model: string]
}
