import type { Logger } from '../../core/base/logger.js'
import type { Purpose } from '../leases/lease.js'
import type { LoadedModel } from '../scheduler/loaded-models.js'

/** What the router surface needs of the scheduler: loads, unloads and what is loaded now. */
export interface RouterScheduler {
  load(name: string, request: { purpose: Purpose }): Promise<void>
  expire(name: string): Promise<void>
  snapshot(): LoadedModel[]
}

export type RouterStatus = { value: 'loaded' | 'loading' | 'unloaded', failed?: true, exit_code?: number }

/**
 * llama-server's router answers `POST /models/load` at once and loads behind it; its clients poll `GET /models` for
 * the status. This keeps what that needs beside the scheduler: the loads under way (a load waiting for room has no
 * instance to show yet), and the stored models whose last load failed (at most one entry per stored model).
 */
export class RouterLoads {
  private readonly pending = new Set<string>()
  private readonly failed = new Set<string>()

  constructor (private readonly scheduler: RouterScheduler, private readonly log: Pick<Logger, 'warn'>) {}

  /**
   * Starts loading a stored model for `purpose`, without waiting for it; `release` is called once the load is over
   * (the asking key's admission, held for it: a key's loads count against its `concurrent` limit as its requests do).
   */
  start (name: string, purpose: Purpose, release: () => void = () => {}): void {
    this.pending.add(name)
    this.failed.delete(name)
    this.scheduler.load(name, { purpose }).then(
      () => { this.pending.delete(name); release() },
      (err: unknown) => {
        release()
        this.pending.delete(name)
        this.failed.add(name)
        this.log.warn({ err, model: name }, 'a load asked by POST /models/load failed')
      })
  }

  /** Where a stored model is: loaded (one instance serves), loading, or unloaded (with `failed` after a failed load). */
  status (name: string, loaded: readonly LoadedModel[] = this.scheduler.snapshot()): RouterStatus {
    const mine = loaded.filter((m) => m.model.name === name)
    if (mine.some((m) => m.state === 'loaded')) return { value: 'loaded' }
    if (mine.some((m) => m.state === 'loading') || this.pending.has(name)) return { value: 'loading' }
    // llama-server reports a failed child's exit code; a start that failed here has none to report (1, as a failed exit).
    return this.failed.has(name) ? { value: 'unloaded', failed: true, exit_code: 1 } : { value: 'unloaded' }
  }
}
