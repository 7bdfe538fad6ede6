import type { EventHub } from '../../core/base/event-hub.js'
import { RuntimeError, UnavailableError } from '../../core/base/errors.js'
import type { ResolvedOptions } from '../../core/config/request-options.js'
import type { ExitInfo } from '../../runtimes/index.js'
import { estimateInstanceBytes } from './memory-estimate.js'
import { Instance } from './instance.js'
import type { Purpose } from '../leases/lease.js'
import { deathReason } from './death-reason.js'
import { loadsSettled } from './loads-settled.js'
import type { SchedulableModel, SchedulerDeps } from './ports.js'
import { ProgressWatchdog } from './progress-watchdog.js'
import type { Room } from './room.js'
import type { RuntimeLife } from './runtime-life.js'
import { cacheShape, RuntimeMaker } from './runtime-maker.js'
import type { SchedulerEvents } from './scheduler-events.js'
import { StandbyRuntimes } from './standby-runtimes.js'
import type { WaitEstimate } from './wait-estimate.js'
import { StartBackoff } from './start-backoff.js'

const BUSY_STOP_GRACE_MS = 500

/** The scheduler's own dependencies, and its room and events. */
export interface InstancesDeps extends SchedulerDeps {
  room: () => Room
  events: EventHub<SchedulerEvents>
  /** What loads have cost: a runtime stands by only where a prepared load saves enough. */
  estimate: WaitEstimate
}

/** How an instance ends: why (told to its requests), and what may be done on the way. */
export interface Ending {
  /** Told to the requests in flight and in line; a promise for a reason still being found (which RPC worker went). */
  reason: Error | Promise<Error>
  /** Its slots are saved first (not for a runtime that cannot answer, or one already dead). @default true */
  save?: boolean
  /** How long llama-server may take to exit on SIGTERM before it is killed (0: at once). @default its default, or 500 ms when busy */
  graceMs?: number
  /** Its process is already gone (a crash): nothing to stop. @default false */
  exited?: boolean
  /** Given up for another model's load: a runtime for it is prepared ahead afterwards (standby-runtimes.ts). @default false */
  standby?: boolean
}

/**
 * The instances the scheduler holds, each from its start to its end: find one that serves a request, start one
 * (back-off, room, workers, GGUF, runtime, restored caches, watchdog), and the one path every end takes (stopped,
 * unloaded, expired, evicted, replaced, crashed, stuck, failed to start, shutdown).
 */
export class Instances {
  private readonly list: Instance[] = []
  private readonly backoff = new StartBackoff()
  private readonly endings = new Map<Instance, Promise<void>>()
  /** Runtimes prepared ahead for models given up for others: a request for one loads from its gate. */
  readonly standby: StandbyRuntimes
  /** Makes a runtime: its spawn options, its life. */
  private readonly maker: RuntimeMaker

  constructor (private readonly deps: InstancesDeps) {
    this.standby = new StandbyRuntimes(deps.log)
    this.maker = new RuntimeMaker(deps)
  }

  all (): readonly Instance[] { return this.list }

  /** The RPC workers (config names) a model's layers are split across; empty when it runs here alone. */
  workersOf (model: Pick<SchedulableModel, 'name'>): string[] {
    return this.deps.settings.modelOptions.get(model.name)?.rpc ?? []
  }

  /** `minContext`: a context grown for an earlier prompt, which a smaller instance no longer serves. */
  find (model: SchedulableModel, resolved: ResolvedOptions, purpose: Purpose, minContext: number): Instance | undefined {
    const room = this.deps.room()
    // One swapped out for another model takes no new requests: they wait for its next load (swap-policy.ts).
    const candidates = this.list.filter((i) => i.model.name === model.name && i.purpose === purpose && i.accepting && !room.isSwappedOut(i) &&
      i.options.num_ctx >= minContext && i.fits(resolved.loadRequested, model.format === 'gguf'))
    // A loaded one before one still loading (whose load, asked for with other options, may fail), then the one
    // with the shortest line, so that requests spread over equivalent instances.
    const loading = (i: Instance): number => i.state === 'loaded' ? 0 : 1
    return candidates.sort((a, b) => loading(a) - loading(b) || (a.active + a.queued) - (b.active + b.queued))[0]
  }

  /** A new instance, its load under way (waiting for room first). */
  start (model: SchedulableModel, resolved: ResolvedOptions, keepAliveMs: number | undefined, purpose: Purpose): Instance {
    const load = resolved.load
    const ctxSize = load.num_ctx * load.num_parallel
    const instance = new Instance(model, load, estimateInstanceBytes(model, ctxSize, load.cache_type_k, load.cache_type_v),
      keepAliveMs ?? this.deps.settings.keepAliveMs, purpose)
    this.list.push(instance)
    this.deps.room().enter(instance)
    instance.startLoading(this.bringUp(instance, ctxSize).catch(async (err) => {
      if ((err as { code?: string }).code === 'no_room') this.deps.room().noRoomFor(model.name, purpose)
      // A start that failed left no runtime to stop.
      await this.end(instance, { reason: err as Error, save: false, exited: true })
      throw err
    }))
    return instance
  }

  /**
   * The one end path: the instance takes no more requests; those in flight end with the reason and those in line are
   * sent away (after a crash or a stuck runtime they look for a fresh instance); its slots are saved; its runtime
   * stops; it leaves the list and the room it held. Runs once: a second end waits for the first.
   */
  end (instance: Instance, ending: Ending): Promise<void> {
    const running = this.endings.get(instance)
    if (running !== undefined) return running
    const done = this.runEnd(instance, ending).finally(() => this.endings.delete(instance))
    this.endings.set(instance, done)
    return done
  }

  private async runEnd (instance: Instance, { reason, save = true, graceMs, exited = false, standby = false }: Ending): Promise<void> {
    // Saved only from a runtime that served, that can answer, and whose model generates.
    const served = save && !exited && instance.state === 'loaded' && instance.purpose === 'generate' && instance.process !== null
    // llama-server finishes its running tasks before it exits on SIGTERM (tens of seconds); requests that we are
    // cutting anyway need not be waited for.
    const grace = graceMs ?? (instance.active > 0 ? BUSY_STOP_GRACE_MS : undefined)
    // A stop or delete of the model while this end saves and stops it leaves nothing standing by for it after.
    const generation = this.standby.generation(instance.model.name)
    if (!instance.beginEnd()) return
    try {
      // At once when the reason is known: a request in flight hears it in the same turn as the end began.
      instance.cut(reason instanceof Error ? reason : await reason)
      // After its requests were cut (their slots free up at once), before it stops: what it holds outlives it.
      if (served && this.deps.promptCache) await this.deps.promptCache.saveFrom(instance.process!, cacheShape(instance))
      if (!exited && instance.process !== null) await instance.life!.stop(grace)
    } finally {
      const at = this.list.indexOf(instance)
      if (at !== -1) this.list.splice(at, 1)
      instance.markGone()
      this.deps.room().forget(instance, instance.process !== null)
      // A crash says so itself ('runtime died'), and a failed start in its error.
      if (!exited) this.deps.log.info({ model: instance.model.name, reason: (reason instanceof Error ? reason : await reason).message }, 'model unloaded')
    }
    if (standby && !exited && instance.process !== null) void this.standBy(instance, generation)
  }

  /**
   * After a model was given up for another: a runtime for it prepared ahead (standby-runtimes.ts), so that its users'
   * next request loads from the gate, kept for the model's own keep-alive (none for one asked to go once idle). Made
   * once the model that replaced it has loaded, so that its preparation does not take the processor from that load.
   * Never throws.
   */
  private async standBy (instance: Instance, generation: number): Promise<void> {
    const { model, purpose, options } = instance
    if (instance.keepAlive === 0 || !this.maker.preparesAhead() || this.workersOf(model).length > 0 || !StandbyRuntimes.pays(this.deps.estimate, model.name, purpose)) return
    // A stop or delete of the model since its end began (`generation` was read then) leaves nothing standing by for it.
    if (this.standby.generation(model.name) !== generation) return
    await loadsSettled(() => this.list, this.deps.events)
    // Loaded again meanwhile (its users came back first): nothing to prepare.
    if (this.list.some((i) => i.model.name === model.name && i.purpose === purpose)) return
    try {
      const spawn = await this.maker.spawnOptions(instance, options.num_ctx * options.num_parallel, {})
      if (this.list.some((i) => i.model.name === model.name && i.purpose === purpose) || this.standby.generation(model.name) !== generation) return
      this.standby.add(model.name, purpose, spawn, this.maker.make(instance, spawn, true), instance.keepAlive)
    } catch (err) {
      this.deps.log.info({ model: model.name, err }, 'no runtime stands by for a model given up for another')
    }
  }

  /** Waits for every ending under way (the app closing). */
  async ended (): Promise<void> {
    await Promise.all([...this.endings.values()])
  }

  private async bringUp (instance: Instance, ctxSize: number): Promise<void> {
    const { model, options, purpose } = instance
    const { store, events, log, promptCache } = this.deps
    const failureKey = StartBackoff.keyOf(instance)
    this.backoff.check(failureKey, model.name)
    const workers = this.workersOf(model)
    if (workers.length === 0) await this.deps.room().refuseWhatCannotFit(instance)
    // A model of this machine whose GGUF is there gets its runtime before its room: once it is next in line and waits
    // for a model in its way, its start goes as far as it can without the memory (prepareAhead).
    if (workers.length === 0 && this.maker.preparesAhead() && store.ggufPath(model, options.dtype) !== null) {
      const spawn = await this.maker.spawnOptions(instance, ctxSize, {})
      this.stoppedMeanwhile(instance)
      // One standing by since the model was given up is already at its gate, or on its way there.
      const standing = this.standby.take(model.name, purpose, spawn)
      instance.madeAhead(standing ?? this.maker.make(instance, spawn, true))
      if (standing !== null) this.prepareNow(instance, standing, 'standing by')
    }
    const ahead = instance.life
    try {
      await this.deps.room().make(instance, ahead?.preparesAhead === true && ahead.state === 'made' ? () => this.prepareAhead(instance, ahead) : undefined)
    } catch (err) {
      await ahead?.stop(0)
      throw err
    }
    if (ahead?.failure) throw ahead.failure
    if (instance.ending) await ahead?.stop(0)
    this.stoppedMeanwhile(instance)
    const life = ahead ?? await this.madeNow(instance, ctxSize, workers)
    // Prepared ahead: its load goes on from its gate (or from its way there).
    const prepared = life.state === 'preparing' || life.state === 'prepared'
    instance.attach(life)
    life.process.onExit((info) => { if (!info.expected) this.crashed(instance, info) })
    const now = this.deps.clock ?? performance.now.bind(performance)
    const spawned = now()
    try {
      await life.start()
    } catch (err) {
      // A start cut short by a stop is not the model's failure: no backoff for it.
      if ((err as { code?: string }).code !== 'runtime_stopped') {
        this.backoff.failed(failureKey, err)
        events.emit('loadFailed', model.name, purpose, err)
      }
      throw err
    }
    // Stopped as its runtime came up (the end found it starting and stopped it, or found no runtime yet).
    if (instance.ending) { await life.stop(0); return }
    this.backoff.succeeded(failureKey)
    const caches = purpose === 'generate' ? promptCache : undefined
    // Before the first request: llama-server then sends each request to the slot holding its conversation.
    if (caches) instance.restoreChecks = await caches.restoreInto(life.process, cacheShape(instance))
    // Its end began during the restores, before it had a judge to stop: what no request took is judged unused.
    if (instance.ending) void instance.restoreChecks?.stop()
    instance.markLoaded()
    const { progressTimeoutMs } = this.deps.settings
    if (progressTimeoutMs !== undefined) {
      instance.watch(new ProgressWatchdog({ source: life.process.endpoint, timeoutMs: progressTimeoutMs, busy: () => instance.active > 0, onStuck: (why) => this.stuck(instance, why) }))
    }
    events.emit('loaded', model.name, purpose, (now() - spawned) / 1000, prepared)
    this.replaceOthers(instance)
    log.info({ model: model.name, purpose, pid: life.process.pid, ctxSize, parallel: options.num_parallel, ...(prepared ? { prepared: true } : {}) }, 'model loaded')
  }

  /**
   * Starts a load's runtime up to its gate while the load waits for room (RuntimeProcess.prepare: the process, the
   * model's metadata and vocabulary, nothing of the memory), once no load given room is under way (it would share the
   * processor).
   */
  private prepareAhead (instance: Instance, life: RuntimeLife): void {
    void loadsSettled(() => this.list, this.deps.events).then(() => { if (life.state === 'made' && !instance.ending) this.prepareNow(instance, life, 'waiting for room') })
  }

  /** A runtime that fails on its way to its gate fails the load at once, so that no model is unloaded for it. */
  private prepareNow (instance: Instance, life: RuntimeLife, how: 'waiting for room' | 'standing by'): void {
    const { model, purpose } = instance
    this.deps.log.info({ model: model.name, pid: life.process.pid, how }, 'a load prepared ahead')
    const gate = life.state === 'standing_by' ? life.claim() : life.prepare()
    gate.catch((err: Error) => {
      if ((err as { code?: string }).code === 'runtime_stopped' || instance.ending) return
      this.backoff.failed(StartBackoff.keyOf(instance), err)
      this.deps.events.emit('loadFailed', model.name, purpose, err)
      void this.end(instance, { reason: err, save: false, exited: true })
    })
  }

  /** A runtime made once room was given: one split across RPC workers, or one not prepared ahead. */
  private async madeNow (instance: Instance, ctxSize: number, workers: string[]): Promise<RuntimeLife> {
    const rpc = workers.length > 0 ? await this.maker.workerSplit(instance, workers) : {}
    const spawn = await this.maker.spawnOptions(instance, ctxSize, rpc)
    this.stoppedMeanwhile(instance)
    return this.maker.make(instance, spawn, false)
  }

  /** @throws UnavailableError when the instance was stopped while it waited for a worker, a conversion or the cache folder */
  private stoppedMeanwhile (instance: Instance): void {
    if (instance.ending) throw new UnavailableError(`model "${instance.model.name}" was stopped while it waited to load`, 'model_stopped')
  }

  /**
   * Only once a new instance serves do the model's instances with other options finish what they have and go: a load
   * that fails (one client's impossible options) leaves everyone else's instance serving.
   */
  private replaceOthers (instance: Instance): void {
    for (const old of this.list) {
      if (old !== instance && old.model.name === instance.model.name && old.purpose === instance.purpose && old.accepting) {
        old.drain()
        if (old.idle && old.state === 'loaded') void this.end(old, { reason: new UnavailableError('replaced') })
      }
    }
  }

  /** Its runtime died while it served: its requests hear why (death-reason.ts), those in line load the model afresh. */
  private crashed (instance: Instance, exit: ExitInfo): void {
    if (instance.state !== 'loaded') return // a failed start is reported by start() itself
    const name = instance.model.name
    this.deps.log.error({ model: name, code: exit.code, signal: exit.signal, logTail: exit.logTail.slice(-10) }, 'runtime died')
    this.deps.events.emit('crashed', name)
    const reason = deathReason(name, exit, this.workersOf(instance.model), this.deps.rpcWorkers)
    void this.end(instance, { reason, save: false, exited: true })
  }

  /**
   * A busy runtime that stopped moving (progress-watchdog.ts): its requests end with the reason, it is killed, and
   * those in line load the model afresh, as after a crash.
   */
  private stuck (instance: Instance, why: string): void {
    if (instance.state !== 'loaded') return
    const name = instance.model.name
    this.deps.log.error({ model: name, pid: instance.process?.pid, why }, 'runtime stuck: stopping it')
    this.deps.events.emit('crashed', name)
    const reason = new RuntimeError(`the runtime of model "${name}" was stuck (${why}), so it was stopped; the model loads again for the next request`, [], 'runtime_stuck')
    void this.end(instance, { reason, graceMs: 0, save: false })
  }
}
