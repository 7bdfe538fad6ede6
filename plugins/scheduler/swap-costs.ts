import type { Instance } from './instance.js'
import type { SchedulerSettings } from './ports.js'
import type { SwapPolicy } from './swap-policy.js'
import { estimateKey, type WaitEstimate } from './wait-estimate.js'

/**
 * Why a loaded model gave way to another (the `reason` label of llamagate_model_evictions_total, /api/ps's swap):
 * `idle-given-up`: it had nothing to do and no request for it was expected soon; `queue-cost`: the waiting requests'
 * cost passed what holding it saves; `bound-reached`: a waiting request was passed over by limits.max_passed_over
 * swaps; `swap-wait`: a request waited limits.swap_wait (or its load timeout); `priority`: a higher-priority model
 * asked; `replaced`: its own model loads with other options; `rpc-workers`: another model needs its RPC workers;
 * `background`: it ran only background work and a person's load needed its room.
 */
export type SwapReason = 'idle-given-up' | 'queue-cost' | 'bound-reached' | 'swap-wait' | 'priority' | 'replaced' | 'rpc-workers' | 'background'

/** A load waiting for room: since when, and how many swaps of other models went ahead of it meanwhile. */
export interface SwapIn {
  readonly instance: Instance
  readonly arrived: number
  passedOver: number
}

/** Give way now (and why), or look again at `until` (ms since epoch). Costs in request-milliseconds. */
export type SwapDecision =
  | { go: true, reason: SwapReason, waitCostMs: number, swapCostMs: number }
  | { go: false, until: number, waitCostMs: number, swapCostMs: number }

type CostSettings = Pick<SchedulerSettings, 'swapWaitMs' | 'maxPassedOver'>

/**
 * The swap decision, by measured costs (wait-estimate.ts): whether a loaded model (the resident) gives way now to a
 * load waiting for room (the swap-in). The waiting cost is the swap-in's requests × how long they have waited; a swap
 * costs the resident's unload and the swap-in's load (what is left of it once prepared while it waited), and coming back costs the swap-in's unload, the resident's load
 * (its restore included) and the swap-in's queued work, which the resident's next request waits through.
 * - An idle resident is given up at once, unless a request for it is expected (its usual gap after going idle) and
 *   holding for it until that request is late costs every request waiting for room (any model's) less than coming
 *   back would cost it (what they waited already is paid either way); the hold ends with that request, or when late.
 * - A busy resident serves what it has (nothing running is cut, and its line is served before the swap); it takes new
 *   requests until the waiting cost passes the swap's and the way back's, then is closed to them.
 * - Bounds over the costs: limits.min_residency (a floor, swap-policy.ts), limits.swap_wait (the longest a swap-in
 *   gives way), limits.max_passed_over (a load passed over this often goes first), and priority.
 */
export class SwapCosts {
  constructor (private readonly deps: { estimate: WaitEstimate, swaps: SwapPolicy, settings: CostSettings }) {}

  /** `othersWaiting`: the requests waiting for other models' loads, which wait through a hold as well. */
  decide (resident: Instance, swapIn: SwapIn, now = Date.now(), othersWaiting = 0): SwapDecision {
    const { estimate, swaps, settings } = this.deps
    const incoming = swapIn.instance
    const waiting = Math.max(incoming.awaitingLoad, 1)
    const age = Math.max(now - swapIn.arrived, 0)
    const waitCostMs = waiting * age
    const { swapCostMs, backMs } = this.swapCost(resident, incoming)
    const go = (reason: SwapReason): SwapDecision => ({ go: true, reason, waitCostMs, swapCostMs })
    const holdUntil = (until: number): SwapDecision => ({ go: false, until: Math.max(until, now + 1), waitCostMs, swapCostMs })
    if (resident.model.name === incoming.model.name) return go('replaced')
    const floor = swaps.residentUntil(resident, incoming.model.name)
    if (now < floor) return holdUntil(floor)
    if (this.isBounded(swapIn)) return go('bound-reached')
    if (swaps.priority(incoming.model.name) > swaps.priority(resident.model.name)) return go('priority')
    const swapWaitMs = settings.swapWaitMs ?? 0
    if (age >= swapWaitMs) return go('swap-wait')
    const latest = swapIn.arrived + swapWaitMs
    if (resident.idle) {
      const next = estimate.nextArrivalMs(resident.model.name, now)
      if (next === null) return go('idle-given-up')
      // Holding costs every request waiting for room, whichever model it is for, the hold and the expected request's
      // service; giving up costs that one the way back. The hold is counted to its end (the expected request is late):
      // an arrival is a guess, and a wrong one is paid by every waiting request. What they have waited already is
      // paid either way: only what is to come counts.
      const holdMs = (waiting + othersWaiting) * (next.lateAfterMs + (estimate.requestMs(estimateKey(resident.model.name, resident.purpose)) ?? 0))
      if (holdMs >= backMs) return go('queue-cost')
      return holdUntil(Math.min(now + next.lateAfterMs, latest))
    }
    if (waitCostMs >= swapCostMs) return go('queue-cost')
    return holdUntil(Math.min(swapIn.arrived + Math.ceil(swapCostMs / waiting), latest))
  }

  /** A swap-in passed over limits.max_passed_over times goes ahead of every other, whatever their priority. */
  isBounded (swapIn: SwapIn): boolean {
    const bound = this.deps.settings.maxPassedOver
    return bound !== undefined && swapIn.passedOver >= bound
  }

  /**
   * What swapping `resident` out for `incoming` costs (ms): the resident's unload and the incoming's load, plus the
   * way back; the way back alone: the incoming's unload, the resident's load, and the incoming's queued work.
   */
  swapCost (resident: Instance, incoming: Instance): { swapCostMs: number, backMs: number } {
    const { estimate } = this.deps
    const residentKey = estimateKey(resident.model.name, resident.purpose)
    const incomingKey = estimateKey(incoming.model.name, incoming.purpose)
    const work = incoming.awaitingLoad * (estimate.requestMs(incomingKey) ?? 0) / Math.max(incoming.options.num_parallel, 1)
    const backMs = estimate.swapOutMs(incomingKey) + estimate.swapInMs(residentKey, resident.model.size, resident.preparesAhead) + work
    return { swapCostMs: estimate.swapOutMs(residentKey) + estimate.swapInMs(incomingKey, incoming.model.size, incoming.preparesAhead) + backMs, backMs }
  }

  /**
   * How long until `incoming` serves, if `resident` is what is in its way: what the resident has to do (or how long
   * it is held), its unload, and the incoming's load.
   */
  expectedRoomMs (resident: Instance, swapIn: SwapIn, now = Date.now(), othersWaiting = 0): number {
    const { estimate } = this.deps
    const incomingKey = estimateKey(swapIn.instance.model.name, swapIn.instance.purpose)
    const residentKey = estimateKey(resident.model.name, resident.purpose)
    const decision = this.decide(resident, swapIn, now, othersWaiting)
    const held = decision.go ? 0 : decision.until - now
    const busy = (resident.active + resident.queued) * (estimate.requestMs(residentKey) ?? 0) / Math.max(resident.options.num_parallel, 1)
    return Math.round(Math.max(held, busy) + estimate.swapOutMs(residentKey) + estimate.swapInMs(incomingKey, swapIn.instance.model.size, swapIn.instance.preparesAhead))
  }
}
