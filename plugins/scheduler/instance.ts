import type { ResolvedOptions } from '../../core/request-options.js'
import type { Purpose } from './lease.js'
import type { RuntimeProcess, SchedulableModel } from './ports.js'

export type InstanceState = 'loading' | 'loaded' | 'unloading'

/** A queued request: resolved with true when a slot is handed to it, false when the instance went away. */
interface Waiter { grant: (granted: boolean) => void }

let nextId = 1

/**
 * One running llama-server for one model with one set of load-time options. Holds its slots (requests in
 * flight, at most `num_parallel`), the FIFO queue of requests waiting for a slot, and its keep-alive.
 */
export class Instance {
  readonly id = nextId++
  state: InstanceState = 'loading'
  /** Requests holding a slot. */
  active = 0
  readonly waiters: Waiter[] = []
  /** Requests waiting for this instance to finish loading (they queue for a slot once it has). */
  awaitingLoad = 0
  /** Set when a request needs other load-time options: no new requests; unloads once idle. */
  draining = false
  lastUsed = Date.now()
  keepAliveMs: number
  /** Scheduled unload time (ms since epoch) while idle; null while busy or kept forever. */
  expiresAt: number | null = null
  timer: NodeJS.Timeout | null = null
  /** Aborted when the instance goes away: requests in flight on it end with the reason. */
  readonly controller = new AbortController()
  /** Settles when the runtime is ready (or failed to start). */
  loaded!: Promise<void>
  loadedAt = 0
  process: RuntimeProcess | null = null

  constructor (
    readonly model: SchedulableModel,
    readonly options: ResolvedOptions['load'],
    readonly estimatedBytes: number,
    keepAliveMs: number,
    readonly purpose: Purpose = 'generate',
  ) {
    this.keepAliveMs = keepAliveMs
  }

  get slots (): number { return this.options.num_parallel }
  get idle (): boolean { return this.active === 0 && this.waiters.length === 0 }
  get accepting (): boolean { return !this.draining && this.state !== 'unloading' }

  /** True when this instance may serve a request that set `requested` load-time options itself. */
  fits (requested: Record<string, unknown>, ignoreDtype: boolean): boolean {
    for (const [key, value] of Object.entries(requested)) {
      if (key === 'dtype' && ignoreDtype) continue
      if ((this.options as Record<string, unknown>)[key] !== value) return false
    }
    return true
  }

  /** Takes a slot at once if one is free and nobody is ahead in the queue. */
  tryTake (): boolean {
    if (this.active < this.slots && this.waiters.length === 0) {
      this.active++
      return true
    }
    return false
  }

  /** Waits in line for a slot. Resolves false when the instance goes away first. */
  enqueue (signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.waiters.indexOf(waiter)
        if (at !== -1) this.waiters.splice(at, 1)
        reject(signal!.reason)
      }
      const waiter: Waiter = {
        grant: (granted) => { signal?.removeEventListener('abort', onAbort); resolve(granted) },
      }
      this.waiters.push(waiter)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Gives a freed slot to the first in line (the slot count stays), or frees it. */
  handOver (): void {
    const next = this.waiters.shift()
    if (next) next.grant(true)
    else this.active--
  }

  /** Sends everyone in line away (they will look for another instance). */
  dismissWaiters (): void {
    for (const waiter of this.waiters.splice(0)) waiter.grant(false)
  }

  clearTimer (): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
