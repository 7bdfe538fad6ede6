import { setMaxListeners } from 'node:events'
import { IllegalTransitionError } from '../../core/base/illegal-transition.js'
import type { ResolvedOptions } from '../../core/config/request-options.js'
import type { Purpose, WaitProgress } from '../leases/lease.js'
import type { RuntimeProcess, SchedulableModel } from './ports.js'
import { KeyLine, type Seat } from '../leases/key-line.js'
import type { RuntimeLife } from './runtime-life.js'
import { SessionSlots } from './session-slots.js'
import { estimateKey, type WaitEstimate } from './wait-estimate.js'

/** What /api/ps says of an instance. */
export type InstanceState = 'loading' | 'loaded' | 'unloading'

/**
 * Where an instance is in its life. waiting_for_room: made for a request, no runtime yet (room is being made);
 * starting: its llama-server is starting; ready: it serves; draining: it takes no new requests and goes once idle
 * (replaced by an instance with other options); stopping: it is ending (its requests cut, its caches being saved,
 * its runtime stopping); gone: out of the scheduler's list. Only the moves in PHASE_MOVES happen; any other is a bug.
 */
export type InstancePhase = 'waiting_for_room' | 'starting' | 'ready' | 'draining' | 'stopping' | 'gone'

const PHASE_MOVES: Readonly<Record<InstancePhase, readonly InstancePhase[]>> = {
  // A load may fail or be stopped before its runtime exists; one replaced by another load drains from any live phase.
  waiting_for_room: ['starting', 'draining', 'stopping'],
  starting: ['ready', 'draining', 'stopping'],
  ready: ['draining', 'stopping'],
  draining: ['stopping'],
  stopping: ['gone'],
  gone: [],
}

/**
 * One running llama-server for one model with one set of load-time options. Holds its slots (requests in
 * flight, at most `num_parallel`, and the requests waiting for one: its `line`, in turns by API key as every lease
 * source's, plugins/leases), and its keep-alive. As many requests again as it has slots may be handed on early, one
 * at a time, to wait in llama-server's own queue: a slot that frees starts the next at once, not after the answer
 * that freed it has come back through the gateway. The scheduler decides when it loads, serves and goes; the instance
 * keeps the books.
 */
export class Instance {
  private currentPhase: InstancePhase = 'waiting_for_room'
  private wasContended = false
  private waitingForLoad = 0
  /** Of those waiting for its load, the requests above background (people, agents): they may make room by a swap. */
  private peopleWaitingForLoad = 0
  /** When a request above background last took a slot on it (ms since epoch; 0: never). */
  private lastPersonUse = 0
  private lastUse = Date.now()
  private keepAliveMs: number
  /** Scheduled unload time (ms since epoch) while idle; null while busy or kept forever. */
  private expiresAt: number | null = null
  private timer: NodeJS.Timeout | null = null
  /** Aborted when the instance goes away: requests in flight on it end with the reason. */
  private readonly controller = new AbortController()
  private loading: Promise<void> = Promise.resolve()
  /** Its runtime's life, once one was made for it: before its room when prepared ahead, else once given room. */
  private owner: RuntimeLife | null = null
  /** Its runtime's process once given room (read on every request: kept at hand). */
  private runtime: RuntimeProcess | null = null
  private watchdog: { stop(): void } | null = null
  private attachedAt = 0
  private servingSince = 0
  /** Which runtime slot each session's cache is in (session-slots.ts). */
  readonly sessions: SessionSlots
  /** Its slots, and the requests waiting for one, in turns by API key (one per slot handed on early). */
  readonly line: KeyLine

  constructor (
    readonly model: SchedulableModel,
    readonly options: ResolvedOptions['load'],
    readonly estimatedBytes: number,
    keepAliveMs: number,
    readonly purpose: Purpose = 'generate',
  ) {
    this.keepAliveMs = keepAliveMs
    this.sessions = new SessionSlots(options.num_parallel)
    this.line = new KeyLine(options.num_parallel, options.num_parallel)
    // Each lease on it listens to its signal, those handed on early too: not a leak, however many slots it has.
    setMaxListeners(10 + 2 * options.num_parallel, this.controller.signal)
  }

  get phase (): InstancePhase { return this.currentPhase }
  /**
   * What /api/ps says: loading until it first serves (a drained one that never served too), loaded while it serves
   * or drains, unloading from the moment it began to end.
   */
  get state (): InstanceState {
    switch (this.currentPhase) {
      case 'waiting_for_room': case 'starting': return 'loading'
      case 'ready': return 'loaded'
      case 'draining': return this.servingSince > 0 ? 'loaded' : 'loading'
      case 'stopping': case 'gone': return 'unloading'
    }
  }

  /** Moves to `to`. @throws IllegalTransitionError when its phase does not lead there */
  private moveTo (to: InstancePhase): void {
    if (!PHASE_MOVES[this.currentPhase].includes(to)) throw new IllegalTransitionError(`instance of model "${this.model.name}"`, this.currentPhase, to)
    this.currentPhase = to
  }
  /** Requests holding a slot. */
  get active (): number { return this.line.active }
  /** Requests waiting for a slot: in line, or handed on early to llama-server's queue. */
  get queued (): number { return this.line.queued }
  /** Requests waiting for this instance to finish loading (they queue for a slot once it has). */
  get awaitingLoad (): number { return this.waitingForLoad }
  /** Of those, the requests above background: a load only background work waits for takes free room only. */
  get peopleAwaitingLoad (): number { return this.peopleWaitingForLoad }
  /**
   * Whether the room it holds is kept only for background work: idle, and no request above background has used it
   * within its keep-alive (a model a person used a moment ago is theirs until then).
   */
  keptOnlyForBackground (now: number): boolean {
    return this.idle && (this.lastPersonUse === 0 || now - this.lastPersonUse >= this.keepAliveMs)
  }
  /** When a request last gave its slot back (ms since epoch): eviction takes the least recently used. */
  get lastUsed (): number { return this.lastUse }
  get idle (): boolean { return this.line.idle }
  get accepting (): boolean { return this.currentPhase === 'waiting_for_room' || this.currentPhase === 'starting' || this.currentPhase === 'ready' }
  /** Ending, or gone: nothing may be started on it any more. */
  get ending (): boolean { return this.currentPhase === 'stopping' || this.currentPhase === 'gone' }
  /** Draining (replaced by an instance with other options) or keep_alive 0: it goes as soon as it is idle. */
  /** How long it stays loaded once idle (ms; Infinity: for good; 0: it goes as soon as it is idle). */
  get keepAlive (): number { return this.keepAliveMs }
  get unloadsWhenIdle (): boolean { return this.currentPhase === 'draining' || this.keepAliveMs === 0 }
  /** Aborted with the reason when the instance goes away. */
  get signal (): AbortSignal { return this.controller.signal }
  /** Its llama-server, once room was made for it (null while it waits for room, prepared ahead or not). */
  get process (): RuntimeProcess | null { return this.runtime }
  /** Its runtime's life (runtime-life.ts): made ahead while it waits for room, or made once room was given. */
  get life (): RuntimeLife | null { return this.owner }
  /** Its runtime goes to its gate while it waits for room (RuntimeProcess.prepare): a swap to it costs what is left. */
  get preparesAhead (): boolean { return this.owner?.preparesAhead === true }

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

  /**
   * Waits for the load, counted meanwhile as waiting (for anyone counting the queue; `person`: a request above
   * background). @throws what the load threw
   */
  async waitUntilLoaded (person = true): Promise<void> {
    this.waitingForLoad++
    if (person) this.peopleWaitingForLoad++
    try {
      await this.loading
    } finally {
      this.waitingForLoad--
      if (person) this.peopleWaitingForLoad--
    }
  }

  /** Its runtime, made before its room so that it is prepared while it waits (it is attached once room is given). */
  madeAhead (life: RuntimeLife): void { this.owner = life }

  /** Its runtime, before its start: room was made, it starts (a drained one still loads). */
  attach (life: RuntimeLife): void {
    if (this.currentPhase !== 'draining') this.moveTo('starting')
    this.owner = life
    this.runtime = life.process
    this.attachedAt = Date.now()
  }

  /** When its llama-server was made, about when its load began (ms since epoch; 0 while it waits for room). */
  get loadStartedAt (): number { return this.attachedAt }

  /** Its runtime serves (a drained one serves only those already in its line). */
  markLoaded (): void {
    if (this.currentPhase !== 'draining') this.moveTo('ready')
    this.servingSince = Date.now()
  }

  /** When it began to serve (ms since epoch; 0 before): min_residency counts from here. */
  get loadedAt (): number { return this.servingSince }

  /** Another model's load had to wait while this one was busy: two clients want the room at once. */
  get contended (): boolean { return this.wasContended }
  markContended (): void { this.wasContended = true }

  /** The saves restored into its slots, judged by the first task each slot takes (restore-checks.ts). */
  restoreChecks: { readonly done: boolean, check(): Promise<void>, stop(): void } | null = null

  /** Watches its runtime while it serves: stopped when it begins to unload. */
  watch (watchdog: { start(): void, stop(): void }): void {
    this.watchdog = watchdog
    watchdog.start()
  }

  /** Replaced by an instance with other load-time options: no new requests; it goes once idle. */
  drain (): void { this.moveTo('draining') }

  /** Ollama's keep_alive 0 with nothing to generate: it goes once the requests on it are done. */
  expireWhenIdle (): void { this.keepAliveMs = 0 }

  /**
   * A request got a slot: the unload clock stops, and the request's keep-alive, if it set one, applies from now.
   * `person`: a request above background.
   */
  claim (keepAliveMs?: number, person = true): void {
    if (person) this.lastPersonUse = Date.now()
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
   * Begins its end: it takes no more requests, its keep-alive clock and watchdog stop. False when it was already
   * ending (the one end path runs once).
   */
  beginEnd (): boolean {
    if (this.ending) return false
    this.moveTo('stopping')
    this.clearTimer()
    this.watchdog?.stop()
    this.restoreChecks?.stop()
    return true
  }

  /** The requests in flight end with `reason`; those in line are sent away (they hear the same reason). */
  cut (reason: Error): void {
    this.controller.abort(reason)
    this.line.dismiss()
  }

  /** Out of the scheduler's list: the end path is over. */
  markGone (): void { this.moveTo('gone') }

  /** A request gave its seat back: its slot goes to the next in turn, or is freed. */
  leave (seat: Seat): void {
    this.lastUse = Date.now()
    seat.leave()
  }

  private clearTimer (): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}

/**
 * Where an acquire waiting on `instance` stands (scheduler.ts `reportWait` asks): waiting for room, for
 * the load (with the median of its earlier loads), or in line (`ticket` marks its place there); null once seated.
 */
export function whereItStands (instance: Instance, ticket: object, estimate: WaitEstimate, startedMs: number): WaitProgress | null {
  const model = instance.model.name
  const now = performance.now()
  if (instance.process === null) return { stage: 'room', model, elapsedMs: Math.round(now - startedMs) }
  if (instance.state === 'loading') {
    const expected = estimate.loadMs(estimateKey(model, instance.purpose))
    return { stage: 'load', model, elapsedMs: Math.round(Date.now() - instance.loadStartedAt), ...(expected !== null ? { expectedMs: expected } : {}) }
  }
  const position = instance.line.positionOf(ticket)
  if (position === 0) return null
  const expected = estimate.queueMs(estimateKey(model, instance.purpose), position, instance.options.num_parallel)
  return { stage: 'queue', model, position, of: instance.queued, elapsedMs: Math.round(now - startedMs), ...(expected !== null ? { expectedMs: expected } : {}) }
}
