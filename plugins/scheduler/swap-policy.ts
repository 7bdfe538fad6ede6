import type { Instance } from './instance.js'
import type { SchedulerSettings } from './ports.js'

/**
 * Who goes first when models do not fit together (config.yaml's limits.swap_wait, limits.min_residency, and per
 * model priority and pinned). The fairness rule: a load waiting for room (the swap-in) gets the next swap when the
 * model in its way goes idle or the swap-in's wait ends, whichever is first; once that wait is over, the model in the
 * way takes no new requests (they wait for its next load) and goes as soon as those in flight and in line are done.
 * Nothing running is cut. So a request waits for a swap at most max(swap_wait, min_residency) + what is in flight on
 * the model in its way + one load. Serial clients leave a model idle for a moment between requests: min_residency is
 * what keeps it loaded through those gaps, so that alternating clients are served in batches, not a swap each. It
 * holds only for a model another model's load has waited for while it was busy: one client switching between two
 * models (an agent's main and small model) can batch nothing, and is never kept waiting by it.
 */
export class SwapPolicy {
  constructor (private readonly settings: Pick<SchedulerSettings, 'swapWaitMs' | 'minResidencyMs' | 'modelOptions'>) {}

  /** config.yaml's models.<name>.priority: a higher one is loaded first and unloaded last. */
  priority (model: string): number {
    return this.settings.modelOptions.get(model)?.priority ?? 0
  }

  /** Never unloaded to make room for another model, nor by its keep-alive. */
  isPinned (model: string): boolean {
    return this.settings.modelOptions.get(model)?.pinned === true
  }

  /**
   * Until when `resident` stays for a load of `forModel` (ms since epoch; past: it may go). A reload of its own model
   * (other load options) is not held back: that is no swap.
   */
  residentUntil (resident: Instance, forModel: string): number {
    if (resident.model.name === forModel || resident.loadedAt === 0 || !resident.contended) return 0
    return resident.loadedAt + (this.settings.minResidencyMs ?? 0)
  }

  /** Loaded models in the order they go to make room: the lowest priority first, then the least recently used. */
  evictionOrder (candidates: Instance[]): Instance[] {
    return [...candidates].sort((a, b) => this.priority(a.model.name) - this.priority(b.model.name) || a.lastUsed - b.lastUsed)
  }

  /**
   * When the swap-in `incoming`, waiting since `arrived`, stops giving way to `resident`'s requests. A swap-in of a
   * higher priority does not give way at all (min_residency still applies: the resident's first requests get served).
   */
  swapAt (incoming: Instance, resident: Instance, arrived: number): number {
    const higher = this.priority(incoming.model.name) > this.priority(resident.model.name)
    const wait = higher ? 0 : this.settings.swapWaitMs ?? 0
    return Math.max(arrived + wait, this.residentUntil(resident, incoming.model.name))
  }

  /** Loads waiting for room go by priority, then in order of arrival (their place in `line`). */
  isAhead (a: Instance, b: Instance, line: readonly Instance[]): boolean {
    const byPriority = this.priority(a.model.name) - this.priority(b.model.name)
    return byPriority !== 0 ? byPriority > 0 : line.indexOf(a) < line.indexOf(b)
  }
}
