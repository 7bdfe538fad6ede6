import type { Instance } from './instance.js'
import type { SchedulerSettings } from './ports.js'

/**
 * Who goes first when models do not fit together, beside the costs (swap-costs.ts): per model priority and pinned,
 * the order idle models go in, the order loads waiting for room take it, and limits.min_residency, a floor the costs
 * work within (0 by default: the costs decide). The floor holds only for a model another model's load has waited
 * for while it was busy: one client switching between two models (an agent's main and small model) can batch
 * nothing, and is never kept waiting by it.
 */
export class SwapPolicy {
  constructor (private readonly settings: Pick<SchedulerSettings, 'minResidencyMs' | 'modelOptions'>) {}

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

  /** Loads waiting for room go by priority, then in order of arrival (their place in `line`). */
  isAhead (a: Instance, b: Instance, line: readonly Instance[]): boolean {
    const byPriority = this.priority(a.model.name) - this.priority(b.model.name)
    return byPriority !== 0 ? byPriority > 0 : line.indexOf(a) < line.indexOf(b)
  }
}
