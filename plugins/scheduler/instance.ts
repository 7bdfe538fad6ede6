import type { ResolvedOptions } from '../../core/request-options.js'
import type { LoadedModel, Purpose } from './lease.js'
import type { RuntimeProcess, SchedulableModel } from './ports.js'

type InstanceState = LoadedModel['state']

/** A queued request: resolved with true when a slot is handed to it, false when the instance went away. */
interface Waiter { grant: (granted: boolean) => void, ticket?: object }

/**
 * One running llama-server for one model with one set of load-time options. Holds its slots (requests in
 * flight, at most `num_parallel`), the FIFO queue of requests waiting for a slot, and its keep-alive. The
 * scheduler decides when it loads, serves and goes; the instance keeps the books.
 */
export class Instance {
  private currentState: InstanceState = 'loading'
  private wasContended = false
  private inFlight = 0
  private readonly waiters: Waiter[] = []
  private waitingForLoad = 0
  private isDraining = false
  private lastUse = Date.now()
  private keepAliveMs: number
  /** Scheduled unload time (ms since epoch) while idle; null while busy or kept forever. */
  private expiresAt: number | null = null
  private timer: NodeJS.Timeout | null = null
  /** Aborted when the instance goes away: requests in flight on it end with the reason. */
  private readonly controller = new AbortController()
  private loading: Promise<void> = Promise.resolve()
  private runtime: RuntimeProcess | null = null
  private watchdog: { stop(): void } | null = null
  private attachedAt = 0
  private servingSince = 0

  constructor (
    readonly model: SchedulableModel,
    readonly options: ResolvedOptions['load'],
    readonly estimatedBytes: number,
    keepAliveMs: number,
    readonly purpose: Purpose = 'generate',
  ) {
    this.keepAliveMs = keepAliveMs
  }

  get state (): InstanceState { return this.currentState }
  /** Requests holding a slot. */
  get active (): number { return this.inFlight }
  /** Requests waiting in line for a slot. */
  get queued (): number { return this.waiters.length }
  /** Requests waiting for this instance to finish loading (they queue for a slot once it has). */
  get awaitingLoad (): number { return this.waitingForLoad }
  /** When a request last gave its slot back (ms since epoch): eviction takes the least recently used. */
  get lastUsed (): number { return this.lastUse }
  get idle (): boolean { return this.inFlight === 0 && this.waiters.length === 0 }
  get accepting (): boolean { return !this.isDraining && this.currentState !== 'unloading' }
  /** Draining (replaced by an instance with other options) or keep_alive 0: it goes as soon as it is idle. */
  get unloadsWhenIdle (): boolean { return this.isDraining || this.keepAliveMs === 0 }
  /** Aborted with the reason when the instance goes away. */
  get signal (): AbortSignal { return this.controller.signal }
  /** Its llama-server, once one was made for it (null while it waits for room). */
  get process (): RuntimeProcess | null { return this.runtime }

  /** When it is due to unload: null when kept forever; while busy, its keep-alive after `now`. */
  expiresAtFrom (now: number): number | null {
    return this.keepAliveMs === Infinity ? null : this.expiresAt ?? now + this.keepAliveMs
  }

  /** True when this instance may serve a request that set `requested` load-time options itself. */
  fits (requested: Record<string, unknown>, ignoreDtype: boolean): boolean {
    for (const [key, value] of Object.entries(requested)) {
      if (key === 'dtype' && ignoreDtype) continue
      if ((this.options as Record<string, unknown>)[key] !== value) return false
    }
    return true
  }

  /** The load under way: its runtime starting (or failing to), once there is room. */
  startLoading (loading: Promise<void>): void { this.loading = loading }

  /** Waits for the load, counted meanwhile as waiting (for anyone counting the queue). @throws what the load threw */
  async waitUntilLoaded (): Promise<void> {
    this.waitingForLoad++
    try {
      await this.loading
    } finally {
      this.waitingForLoad--
    }
  }

  /** The llama-server made for it, before its start. */
  attach (process: RuntimeProcess): void {
    this.runtime = process
    this.attachedAt = Date.now()
  }

  /** When its llama-server was made, about when its load began (ms since epoch; 0 while it waits for room). */
  get loadStartedAt (): number { return this.attachedAt }

  /** Its runtime serves. */
  markLoaded (): void {
    if (this.currentState !== 'loading') return
    this.currentState = 'loaded'
    this.servingSince = Date.now()
  }

  /** When it began to serve (ms since epoch; 0 before): min_residency counts from here. */
  get loadedAt (): number { return this.servingSince }

  /** Another model's load had to wait while this one was busy: two clients want the room at once. */
  get contended (): boolean { return this.wasContended }
  markContended (): void { this.wasContended = true }

  /** Watches its runtime while it serves: stopped when it begins to unload. */
  watch (watchdog: { start(): void, stop(): void }): void {
    this.watchdog = watchdog
    watchdog.start()
  }

  /** Replaced by an instance with other load-time options: no new requests; it goes once idle. */
  drain (): void { this.isDraining = true }

  /** Ollama's keep_alive 0 with nothing to generate: it goes once the requests on it are done. */
  expireWhenIdle (): void { this.keepAliveMs = 0 }

  /** A request got a slot: the unload clock stops, and the request's keep-alive, if it set one, applies from now. */
  claim (keepAliveMs?: number): void {
    this.clearTimer()
    this.expiresAt = null
    if (keepAliveMs !== undefined) this.keepAliveMs = keepAliveMs
  }

  /** Idle now: calls `onExpire` once its keep-alive has passed (never when kept forever). */
  armExpiry (onExpire: () => void): void {
    if (this.keepAliveMs === Infinity) return
    this.expiresAt = Date.now() + this.keepAliveMs
    this.timer = setTimeout(onExpire, this.keepAliveMs)
    this.timer.unref()
  }

  /**
   * Stops taking requests and its keep-alive clock. With a reason, the requests in flight end with it and those
   * in line are sent away at once; without, that waits for `end()`. False when it was already unloading.
   */
  beginUnload (reason?: Error): boolean {
    if (this.currentState === 'unloading') return false
    this.currentState = 'unloading'
    this.clearTimer()
    this.watchdog?.stop()
    if (reason !== undefined) this.end(reason)
    return true
  }

  /** The requests in flight end with `reason`; those in line are sent away (they hear the same reason). */
  end (reason: Error): void {
    this.controller.abort(reason)
    this.dismissWaiters()
  }

  /** Takes a slot at once if one is free and nobody is ahead in the queue. */
  tryTake (): boolean {
    if (this.inFlight < this.options.num_parallel && this.waiters.length === 0) {
      this.inFlight++
      return true
    }
    return false
  }

  /** Where the request holding `ticket` is in line: 1 is next; 0 when it is not in line. */
  positionOf (ticket: object): number {
    return this.waiters.findIndex((w) => w.ticket === ticket) + 1
  }

  /** Waits in line for a slot; `ticket` lets positionOf find it. Resolves false when the instance goes away first. */
  enqueue (signal?: AbortSignal, ticket?: object): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.waiters.indexOf(waiter)
        if (at !== -1) this.waiters.splice(at, 1)
        reject(signal!.reason)
      }
      const waiter: Waiter = {
        grant: (granted) => { signal?.removeEventListener('abort', onAbort); resolve(granted) },
        ticket,
      }
      this.waiters.push(waiter)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** A request gave its slot back: it goes to the first in line (the slot count stays), or is freed. */
  handOver (): void {
    this.lastUse = Date.now()
    const next = this.waiters.shift()
    if (next) next.grant(true)
    else this.inFlight--
  }

  /** Sends everyone in line away (they will look for another instance). */
  dismissWaiters (): void {
    for (const waiter of this.waiters.splice(0)) waiter.grant(false)
  }

  private clearTimer (): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
