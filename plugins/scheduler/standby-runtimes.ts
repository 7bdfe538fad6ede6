import type { Logger } from '../../core/base/logger.js'
import type { Purpose } from '../leases/lease.js'
import type { RuntimeProcess, RuntimeSpawnOptions } from './ports.js'

// Parked runtimes hold a process and the model's vocabulary in host memory (60-110 MB for 128k-262k tokens), nothing
// of the room: two cover the models a one-room machine swaps between most.
const MAX_STANDING_BY = 2

/** A runtime standing by, for /api/ps: its model and purpose, and until when (null: kept). */
export interface StandingBy { model: string, purpose: Purpose, process: RuntimeProcess, expiresAt: number | null }

interface Standing extends StandingBy { key: string, options: string, timer: NodeJS.Timeout | null }

/**
 * Runtimes prepared ahead for models that were given up for another while their users were at work
 * (RuntimeProcess.prepare: parked before the model's memory): a request for one starts from its gate, as a load that
 * waited for room does. One per model, the most recent MAX_STANDING_BY kept; each stopped when its keep-alive passes
 * unused, when its model is stopped, or when the scheduler closes.
 */
export class StandbyRuntimes {
  private readonly standing = new Map<string, Standing>()
  /** How often each model's runtimes were stopped by drop(): one made across a stop is not parked. */
  private readonly drops = new Map<string, number>()
  private closed = false

  constructor (private readonly log: Pick<Logger, 'info'>) {}

  /** The runtimes standing by now, oldest first. */
  list (): StandingBy[] { return [...this.standing.values()].map(({ model, purpose, process, expiresAt }) => ({ model, purpose, process, expiresAt })) }

  /**
   * Parks `process` (made with `options`) for `model` serving `purpose`, which was given up, until taken or
   * `keepAliveMs` passes; replaces one already there.
   */
  add (model: string, purpose: Purpose, options: RuntimeSpawnOptions, process: RuntimeProcess, keepAliveMs: number): void {
    if (this.closed) { void process.stop(0); return }
    const key = keyOf(model, purpose)
    this.dropKey(key, 'replaced')
    const timer = Number.isFinite(keepAliveMs) ? setTimeout(() => this.dropKey(key, 'keep_alive expired'), keepAliveMs) : null
    timer?.unref()
    const standing: Standing = { key, model, purpose, options: JSON.stringify(options), process, timer, expiresAt: Number.isFinite(keepAliveMs) ? Date.now() + keepAliveMs : null }
    this.standing.set(key, standing)
    process.onExit(() => { if (this.standing.get(key) === standing) this.forget(standing) })
    process.prepare!().catch(() => { if (this.standing.get(key) === standing) this.dropKey(key, 'its preparation failed') })
    const oldest = this.standing.size > MAX_STANDING_BY ? this.standing.keys().next().value : undefined
    if (oldest !== undefined) this.dropKey(oldest, 'others were given up since')
    this.log.info({ model, pid: process.pid }, 'a runtime stands by for a model given up for another')
  }

  /** The runtime standing by for `model` and `purpose`, if made with these very options; it stands by no more. */
  take (model: string, purpose: string, options: RuntimeSpawnOptions): RuntimeProcess | null {
    const key = keyOf(model, purpose)
    const standing = this.standing.get(key)
    if (standing === undefined) return null
    if (standing.options !== JSON.stringify(options)) { this.dropKey(key, 'other options asked for'); return null }
    this.forget(standing)
    return standing.process
  }

  /** Changes whenever `model`'s runtimes are dropped (stopped, deleted): compare before and after making one. */
  generation (model: string): number { return this.drops.get(model) ?? 0 }

  /** Stops the runtimes standing by for `model`, whatever their purpose. */
  drop (model: string, why: string): void {
    this.drops.set(model, this.generation(model) + 1)
    for (const standing of [...this.standing.values()]) if (standing.model === model) this.dropKey(standing.key, why)
  }

  /** Stops every one, and parks none from now on: the scheduler is closing. */
  close (): void {
    this.closed = true
    for (const key of [...this.standing.keys()]) this.dropKey(key, 'the server is shutting down')
  }

  private dropKey (key: string, why: string): void {
    const standing = this.standing.get(key)
    if (standing === undefined) return
    this.forget(standing)
    this.log.info({ model: standing.model, why }, 'a runtime standing by stopped')
    void standing.process.stop(0)
  }

  private forget (standing: Standing): void {
    if (standing.timer !== null) clearTimeout(standing.timer)
    this.standing.delete(standing.key)
  }
}

function keyOf (model: string, purpose: string): string { return `${model}\0${purpose}` }
