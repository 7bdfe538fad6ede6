import type { Logger } from '../../core/base/logger.js'
import type { Purpose } from '../leases/lease.js'
import type { RuntimeSpawnOptions } from './ports.js'
import type { RuntimeLife } from './runtime-life.js'
import { estimateKey, type WaitEstimate } from './wait-estimate.js'

// Parked runtimes hold a process and the model's vocabulary in host memory (60-110 MB for 128k-262k tokens), nothing
// of the room: two cover the models a one-room machine swaps between most.
const MAX_STANDING_BY = 2
// A runtime stands by for a model only where preparing it (spawn to gate) takes this long: what a swap to it saves.
const MIN_GAIN_MS = 50

/** A runtime standing by, for /api/ps: its model and purpose, its process, and until when (null: kept). */
export interface StandingBy { model: string, purpose: Purpose, pid: number | null, expiresAt: number | null }

interface Standing { key: string, model: string, purpose: Purpose, life: RuntimeLife, options: string, timer: NodeJS.Timeout | null, expiresAt: number | null }

/**
 * The pool of runtimes standing by (runtime-life.ts's standing_by) for models that were given up for another while
 * their users were at work: parked at their gate, before the model's memory, so that a request for one starts from
 * there, as a load that waited for room does. Its budget: one per model, the most recent MAX_STANDING_BY kept, and
 * only for a model whose preparation saves MIN_GAIN_MS; each stopped when its keep-alive passes unused, when its
 * model is stopped, or when the scheduler closes.
 */
export class StandbyRuntimes {
  private readonly standing = new Map<string, Standing>()
  /** How often each model's runtimes were stopped by drop(): one made across a stop is not parked. */
  private readonly drops = new Map<string, number>()
  private closed = false

  constructor (private readonly log: Pick<Logger, 'info'>) {}

  /**
   * Whether a runtime standing by for `model` serving `purpose` saves its users enough to be worth its process: its
   * preparations (spawn to gate) measured at MIN_GAIN_MS or more, or before one was, its whole loads. A small
   * vocabulary is read in milliseconds, and a swap there gains less than the process costs the processor.
   */
  static pays (estimate: WaitEstimate, model: string, purpose: Purpose): boolean {
    const key = estimateKey(model, purpose)
    const saved = estimate.preparationMs(key) ?? estimate.loadMs(key)
    return saved !== null && saved >= MIN_GAIN_MS
  }

  /** The runtimes standing by now, oldest first. */
  list (): StandingBy[] {
    return [...this.standing.values()].map(({ model, purpose, life, expiresAt }) => ({ model, purpose, pid: life.process.pid ?? null, expiresAt }))
  }

  /**
   * Parks `life` (its process made with `options`, not started) for `model` serving `purpose`, which was given up:
   * it goes to its gate and stands by until taken or `keepAliveMs` passes; replaces one already there.
   */
  add (model: string, purpose: Purpose, options: RuntimeSpawnOptions, life: RuntimeLife, keepAliveMs: number): void {
    if (this.closed || !life.preparesAhead) { void life.stop(0); return }
    const key = keyOf(model, purpose)
    this.dropKey(key, 'replaced')
    const timer = Number.isFinite(keepAliveMs) ? setTimeout(() => this.dropKey(key, 'keep_alive expired'), keepAliveMs) : null
    timer?.unref()
    const standing: Standing = { key, model, purpose, options: JSON.stringify(options), life, timer, expiresAt: Number.isFinite(keepAliveMs) ? Date.now() + keepAliveMs : null }
    this.standing.set(key, standing)
    life.process.onExit(() => { if (this.standing.get(key) === standing) this.forget(standing) })
    life.standBy().catch(() => { if (this.standing.get(key) === standing) this.dropKey(key, 'its preparation failed') })
    const oldest = this.standing.size > MAX_STANDING_BY ? this.standing.keys().next().value : undefined
    if (oldest !== undefined) this.dropKey(oldest, 'others were given up since')
    this.log.info({ model, pid: life.process.pid }, 'a runtime stands by for a model given up for another')
  }

  /**
   * The runtime standing by for `model` and `purpose`, if made with these very options; it leaves the pool, still
   * standing by, for the load to claim (RuntimeLife.claim).
   */
  take (model: string, purpose: string, options: RuntimeSpawnOptions): RuntimeLife | null {
    const key = keyOf(model, purpose)
    const standing = this.standing.get(key)
    if (standing === undefined) return null
    if (standing.options !== JSON.stringify(options)) { this.dropKey(key, 'other options asked for'); return null }
    // Its exit forgets it at once; this only guards the table against a life that left standing by some other way.
    if (standing.life.state !== 'standing_by') { this.forget(standing); return null }
    this.forget(standing)
    return standing.life
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
    void standing.life.stop(0)
  }

  private forget (standing: Standing): void {
    if (standing.timer !== null) clearTimeout(standing.timer)
    this.standing.delete(standing.key)
  }
}

function keyOf (model: string, purpose: string): string { return `${model}\0${purpose}` }
