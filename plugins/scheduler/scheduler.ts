import { EventHub } from '../../core/base/event-hub.js'
import { RuntimeError, UnavailableError } from '../../core/base/errors.js'
import { withBodyFields, type RuntimeEndpoint } from '../../runtimes/index.js'
import { ContextGrowth } from './context-growth.js'
import { contextWindow, type ContextWindow } from './context-window.js'
import { whereItStands, type Instance } from './instance.js'
import { Instances } from './instances.js'
import type { AcquireRequest, Lease, LeaseSource, Purpose, WaitProgress } from '../leases/lease.js'
import type { Seat } from '../leases/key-line.js'
import type { LeaseEvents } from '../leases/lease-events.js'
import { cacheGroupFields, grantLease } from '../leases/lease-terms.js'
import { answerWatched } from '../leases/answer-begun.js'
import { loadedModels, loadedRuntimes, preparedRuntimes, requestCounts, type LoadedModel, type PreparedRuntime } from './loaded-models.js'
import type { SchedulableModel, SchedulerDeps } from './ports.js'
import { planRequest, type RequestPlan } from './request-plan.js'
import { Room } from './room.js'
import type { SchedulerEvents } from './scheduler-events.js'
import { SwapCosts } from './swap-costs.js'
import { SwapPolicy } from './swap-policy.js'
import { timedRestores } from './restore-timer.js'
import { estimateKey, WaitEstimate, type CostFigures } from './wait-estimate.js'


/**
 * Orchestrates the models stored here: each request's plan (request-plan.ts), an instance that serves it or a new
 * one (instances.ts: start, and the one end path), room for it (room.ts), a slot in its line (plugins/leases/key-line.ts, in turns
 * by API key; the key's own rules, plugins/quotas/queue-share.ts), and a lease (plugins/leases/lease-terms.ts). Loads on first use (one load shared by concurrent
 * requests), unloads on keep-alive, evicts an idle instance to make room, and never cuts a running generation to make
 * room for another model. Upstreams are another plugin's: the lease router in front of it (plugins/upstreams).
 */
export class Scheduler implements LeaseSource {
  /** Loads, failures, evictions, crashes and each request's first token and token counts, for observers (metrics). */
  readonly events: EventHub<SchedulerEvents>
  private readonly instances: Instances
  private readonly room: Room
  private readonly swaps: SwapPolicy
  private readonly growth: ContextGrowth
  /** Costs measured per model (loads, restores, unloads, requests, speeds, gaps): the swap decision and the expected waits. */
  private readonly estimate = new WaitEstimate()
  private closing = false
  /** Where its leases tell their first token and tokens: the lease router's observers, or its own. */
  readonly leaseEvents: EventHub<LeaseEvents>

  constructor (private readonly deps: SchedulerDeps) {
    this.events = new EventHub((err) => deps.log.warn({ err }, 'a scheduler observer failed'))
    this.leaseEvents = deps.leaseEvents ?? new EventHub((err) => deps.log.warn({ err }, 'a lease observer failed'))
    this.swaps = new SwapPolicy(deps.settings)
    this.growth = new ContextGrowth(deps.log)
    this.events.on('loaded', (model, purpose, seconds, prepared) => this.estimate.loaded(estimateKey(model, purpose), seconds * 1000, prepared))
    // Restores timed on their way through: a swap's cost, measured on the scheduler's side of the port.
    const promptCache = deps.promptCache && timedRestores(deps.promptCache, (model, ms) => this.estimate.restored(estimateKey(model, 'generate'), ms))
    this.instances = new Instances({ ...deps, ...(promptCache ? { promptCache } : {}), room: () => this.room, events: this.events, estimate: this.estimate })
    this.room = new Room({
      instances: () => this.instances.all(),
      settings: deps.settings,
      runtimes: deps.runtimes,
      swaps: this.swaps,
      costs: new SwapCosts({ estimate: this.estimate, swaps: this.swaps, settings: deps.settings }),
      estimate: this.estimate,
      workersOf: (model) => this.instances.workersOf(model),
      // A request waits on this unload, and the victim is idle: killed at once, not asked to finish.
      evict: (victim) => this.instances.end(victim, { reason: new UnavailableError('evicted'), graceMs: 0, standby: true }),
      reload: (name, purpose) => this.load(name, { purpose }),
      closing: () => this.closing,
      events: this.events,
      log: deps.log,
    })
  }

  /** The stored name a request's model reaches (an alias's model). @throws InvalidModelNameError, ModelNotFoundError */
  modelName (name: string): string {
    return this.deps.store.get(name).name
  }

  storedHere (name: string): boolean {
    return this.deps.store.lookup(name) !== null
  }

  /** Requests in flight on a stored model here, and its slots: what a router weighs against upstreams listing it too. */
  localLoad (name: string): { active: number, limit: number } {
    const instances = this.instances.all().filter((i) => i.model.name === name)
    // Not loaded: room for the request (it loads the model).
    if (instances.length === 0) return { active: 0, limit: 1 }
    return { active: instances.reduce((n, i) => n + i.active + i.queued, 0), limit: instances.reduce((n, i) => n + i.options.num_parallel, 0) }
  }

  /** Loads the model if needed and waits for a slot. @throws ModelNotFoundError, QueueFullError, RuntimeError */
  async acquire (name: string, request: AcquireRequest = {}): Promise<Lease> {
    const started = performance.now()
    const plan = planRequest(this.deps.store.get(name), request, { settings: this.deps.settings, growth: this.growth, swaps: this.swaps })
    this.estimate.arrived(plan.model.name)
    for (;;) {
      if (this.closing) throw new UnavailableError('the server is shutting down')
      request.signal?.throwIfAborted()
      const instance = this.instances.find(plan.model, plan.resolved, plan.purpose, plan.minContext) ?? this.instances.start(plan.model, plan.resolved, plan.keepAliveMs, plan.purpose)
      const taken = await this.takeSlot(instance, request, plan, started)
      if (taken !== null) return this.lease(instance, plan, started, request, taken.seat, taken.waiting)
      // Sent away from the line of one swapped out for a person's load: it waits for the model's next load.
      if (!instance.ending && this.room.isSwappedOut(instance)) continue
      // The instance went away while we waited. After a crash the next request starts a fresh one; after a stop
      // (or shutdown) the waiting requests end with the reason.
      const reason: unknown = instance.signal.reason
      if (!(reason instanceof RuntimeError)) throw reason ?? new UnavailableError(`model "${plan.model.name}" was unloaded`)
    }
  }

  /** Loads a model without taking a slot (Ollama's empty-prompt load). */
  async load (name: string, request: AcquireRequest = {}): Promise<void> {
    const lease = await this.acquire(name, request)
    lease.release()
  }

  /** Unloads every instance of a model at once; requests in flight on it end with an error. Idempotent. */
  async stop (name: string): Promise<void> {
    const model = this.deps.store.get(name)
    this.room.notAgain(model.name) // stopped on purpose: not loaded again by itself
    this.instances.standby.drop(model.name, 'the model was stopped')
    await this.endAll((i) => i.model.name === model.name, new UnavailableError(`model "${model.name}" was stopped`, 'model_stopped'))
  }

  /**
   * Ollama's `keep_alive: 0` with nothing to generate: unload the model once its requests are done (idle
   * instances go now). Unlike stop, nothing in flight is cut.
   */
  async expire (name: string): Promise<void> {
    const model = this.deps.store.get(name)
    const instances = this.instances.all().filter((i) => i.model.name === model.name)
    for (const instance of instances) instance.expireWhenIdle()
    this.instances.standby.drop(model.name, 'keep_alive 0')
    await this.endAll((i) => instances.includes(i) && i.idle && i.state === 'loaded', new UnavailableError('keep_alive expired'))
  }

  /** Stops everything: the app is closing. */
  async unloadAll (): Promise<void> {
    this.closing = true
    this.instances.standby.close()
    await this.endAll(() => true, new UnavailableError('the server is shutting down'))
    await this.instances.ended()
  }

  /** What is loaded now, for /api/ps. */
  snapshot (): LoadedModel[] {
    return loadedModels(this.instances.all(), this.estimate, (model) => this.instances.workersOf(model), (i) => this.room.swapOf(i))
  }

  /** The runtimes prepared ahead now (none of them loaded), for /api/ps. */
  prepared (): PreparedRuntime[] {
    return preparedRuntimes(this.instances.all(), this.instances.standby.list())
  }

  /** What the swap decision has measured of a model's generating runtime (wait-estimate.ts), for /metrics. */
  costs (name: string): CostFigures {
    return this.estimate.figures(estimateKey(name, 'generate'), name)
  }

  /** A stored model's context: trained, loaded now, and the most a request may fill (context-window.ts). @throws ModelNotFoundError */
  contextWindow (name: string): ContextWindow {
    return contextWindow(this.deps.store.get(name), this.instances.all(), this.deps.settings)
  }

  /** The RPC workers a model is split across (config.yaml's models.<name>.rpc); empty for a local one. */
  workersOf (model: Pick<SchedulableModel, 'name'>): string[] {
    return this.instances.workersOf(model)
  }

  /** Requests in flight and queued by model, over every instance (those still waiting for room included). */
  requestCounts (): Map<string, { inFlight: number, queued: number }> {
    return requestCounts(this.instances.all())
  }

  /** The runtimes of the loaded instances, to ask for their own statistics (metrics, slots). */
  loadedRuntimes (): Array<{ model: string, purpose: Purpose, endpoint: RuntimeEndpoint }> {
    return loadedRuntimes(this.instances.all())
  }

  /**
   * Waits for the instance's load, then for a slot in its API key's line (the key its usage record names): turns go
   * round the keys (plugins/leases/key-line.ts). Only a request that has to wait hears about it (reportWait). Null when the
   * instance went away meanwhile.
   */
  private async takeSlot (instance: Instance, request: AcquireRequest, plan: RequestPlan, started: number): Promise<{ seat: Seat, waiting: WaitReport | null } | null> {
    const onWait = request.onWait
    // Waiting for room, a request hears the costs' estimate of when its model loads.
    const waiting = onWait
      ? reportWait((ticket) => whereItStands(instance, ticket, this.estimate, started), (wait) => onWait(wait.stage === 'room' ? withRoomEstimate(wait, this.room.expectedRoomMs(instance)) : wait))
      : null
    let seat: Seat | null = null
    const usage = request.usage
    const priority = plan.priority
    if (usage) usage.priority = priority
    try {
      const loaded = instance.waitUntilLoaded(priority !== 'background')
      // One more request waiting for room raises what its wait costs: the swap decision looks again.
      if (instance.process === null) this.room.wake()
      await loaded
      if (instance.state !== 'loaded') return null
      // One line for every lease source (plugins/leases): the queue's length, the key's own rules, its turns, its class.
      seat = await instance.line.takeSeat({
        model: instance.model.name,
        queueLength: this.deps.settings.queueLength,
        oneRequestMs: () => this.estimate.queueMs(estimateKey(instance.model.name, instance.purpose), 1, instance.options.num_parallel) ?? 1000,
      }, { signal: request.signal, usage, ticket: waiting?.ticket, early: request.streams === true, priority })
      return seat === null ? null : { seat, waiting }
    } finally {
      // One handed on early still waits (in llama-server's queue): it hears where it stands until it is seated.
      if (seat === null || !seat.early) waiting?.stop()
    }
  }

  private lease (instance: Instance, plan: RequestPlan, started: number, request: AcquireRequest, seat: Seat, waiting: WaitReport | null): Lease {
    instance.claim(plan.keepAliveMs, plan.priority !== 'background')
    // A session is its cache group's: another group's session of the same id never reaches its slot (nor could it
    // read the cache there: the groups' salts differ). One handed on early goes where llama-server puts it: no slot
    // is known to be free for it.
    const session = plan.purpose === 'generate' && request.session !== undefined && !seat.early ? `${request.usage?.cacheGroup ?? ''}\0${request.session}` : undefined
    const slot = instance.sessions.take(session)
    const process = instance.process!
    // Each request of a cache group carries its group's salt; a session's its slot.
    const fields = { ...cacheGroupFields(request.usage?.cacheGroup, process.separatesCaches), ...(slot !== null ? { id_slot: slot } : {}) }
    const endpoint = Object.keys(fields).length === 0 ? process.endpoint : withBodyFields(process.endpoint, fields)
    // The line hands the next request on early only once this one has begun (its answer's head: a slot took it). A
    // whole answer says nothing until its end: it counts as begun at once.
    if (request.streams !== true) seat.begun()
    return grantLease({
      model: instance.model,
      endpoint: request.streams === true ? answerWatched(endpoint, () => seat.begun()) : endpoint,
      sampling: plan.resolved.sampling,
      contextLength: instance.options.num_ctx,
      started,
      ...(seat.early ? { seated: seat.seated, onSeated: () => waiting?.stop() } : {}),
      usage: request.usage,
      signal: instance.signal,
      // Background work taken back for a request of a higher class ends as the instance's end would end it.
      ...(seat.preempted !== undefined ? { preempted: seat.preempted } : {}),
      clientSignal: request.signal,
      events: this.leaseEvents,
      fitPrompt: (promptTokens) => this.growth.fit(instance, plan.resolved, promptTokens, () => this.room.memoryBudget(instance)),
      release: (heldMs, served) => {
        waiting?.stop()
        instance.sessions.release(slot)
        // One that never got a slot says nothing of how long a request holds one.
        if (!seat.early || heldMs > 0) this.estimate.served(estimateKey(instance.model.name, instance.purpose), heldMs, served)
        this.release(instance, seat)
      },
    })
  }

  /** A request gave its slot back: the next in line takes it, or the keep-alive clock starts (keep_alive 0: it goes). */
  private release (instance: Instance, seat: Seat): void {
    instance.leave(seat)
    if (instance.restoreChecks?.done === false) void instance.restoreChecks.check()
    if (!instance.idle || instance.state !== 'loaded') return
    // The gap to its next request is a cost the swap decision reads: measured from when nothing of the model is left.
    if (this.instances.all().every((i) => i.model.name !== instance.model.name || (i.idle && i.awaitingLoad === 0))) this.estimate.wentIdle(instance.model.name)
    const expire = (): void => { void this.instances.end(instance, { reason: new UnavailableError('keep_alive expired') }) }
    if (instance.unloadsWhenIdle) { expire(); return }
    instance.armExpiry(expire)
    this.room.wake()
  }

  private async endAll (which: (instance: Instance) => boolean, reason: Error): Promise<void> {
    await Promise.all(this.instances.all().filter(which).map((i) => this.instances.end(i, { reason })))
  }
}

/** A room-stage report with the costs' estimate of the rest of its wait, when there is one. */
function withRoomEstimate (wait: WaitProgress, expectedMs: number | null): WaitProgress {
  return expectedMs === null ? wait : { ...wait, expectedMs }
}

// Often enough that a client (or a proxy's idle timer) hears something well within any usual timeout.
const EVERY_MS = 1000
// The first report opens the stream, after which a failure can only be an error event, not a status: a wait shorter
// than this (a small model's load, a refusal at once) keeps its real status (a 400 "prompt is too long" that an agent
// compacts on, a 502 for no runtime), and a client hears nothing it need not.
const FIRST_MS = 2000

/** One request's report of its wait: `ticket` marks its place in a line (`takeSeat`, `positionOf`). */
interface WaitReport {
  readonly ticket: object
  stop(): void
}

/**
 * Tells `onWait` where a request stands (as its source sees it: `whereItStands`) once it has waited two seconds, then
 * every second, until stopped: a request that does not wait, or not long, hears nothing.
 */
function reportWait (whereItStands: (ticket: object) => WaitProgress | null, onWait: (wait: WaitProgress) => void): WaitReport {
  const ticket = {}
  const tick = (): void => {
    const wait = whereItStands(ticket)
    // A listener's failure is its own (a closed stream): the wait goes on.
    if (wait !== null) try { onWait(wait) } catch {}
  }
  let timer: NodeJS.Timeout | null = null
  const first = setTimeout(() => { tick(); timer = setInterval(tick, EVERY_MS).unref() }, FIRST_MS).unref()
  return { ticket, stop: () => { clearTimeout(first); if (timer !== null) clearInterval(timer) } }
}
