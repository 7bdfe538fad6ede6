import { GatewayError, RuntimeError, UnavailableError, QueueFullError, TooManyRequestsError } from '../../core/errors.js'
import { formatBytes } from '../../core/units.js'
import { EventHub } from '../../core/event-hub.js'
import { linkedSignal } from '../../core/linked-signal.js'
import type { RequestUsage } from '../../core/request-usage.js'
import type { Logger } from '../../core/logger.js'
import { resolveOptions, type ResolvedOptions } from '../../core/request-options.js'
import type { RuntimeEndpoint } from '../../runtimes/index.js'
import { Instance } from './instance.js'
import type { AcquireRequest, FitResult, Lease, LeaseSource, LoadedModel, Purpose } from './lease.js'
import { planContext, type ContextPlan } from './context-fit.js'
import { estimateInstanceBytes } from './memory-estimate.js'
import { modelArgs } from './model-args.js'
import { ProgressWatchdog } from './progress-watchdog.js'
import type { CacheShape, PromptCaches } from './prompt-caches.js'
import { checkPurpose, purposeFlags, purposeOptions } from './purpose.js'
import type { EnsureVariant, SchedulableModel, SchedulerRpcWorkers, SchedulerRuntimes, SchedulerSettings, SchedulerStore } from './ports.js'
import type { SchedulerEvents } from './scheduler-events.js'
import { SwapPolicy } from './swap-policy.js'
import { cacheGroupFields } from './cache-group-fields.js'
import { leaseBooks } from './lease-books.js'
import { reserveTokens } from './token-reservation.js'
import { WaitEstimate } from './wait-estimate.js'
import { estimateKey, reportWait } from './wait-report.js'


// Start failures delay the next start of the same model with the same load options: 1 s, 2 s, 4 s ... up to a
// minute. Keyed by the options, so that one client's bad options never hold back another's requests.
const BACKOFF_BASE_MS = 1000
const BACKOFF_MAX_MS = 60_000
const BUSY_STOP_GRACE_MS = 500
// KV caches below this load without asking whether they fit (llama-server decides, as for any small load).
const CACHE_CHECK_BYTES = 2 ** 30

/**
 * Owns every running model instance: loads on first use (one load shared by concurrent requests), hands out
 * slots in turns by API key (in arrival order without keys), unloads on keep-alive, evicts an idle instance to
 * make room (swap-policy.ts's order), and never cuts a running generation to make room for another model.
 */
export class Scheduler implements LeaseSource {
  private readonly instances: Instance[] = []
  private readonly failures = new Map<string, { count: number, retryAt: number, message: string }>()
  /** Woken whenever room may have appeared (an unload, an instance going idle). */
  private roomWaiters: Array<() => void> = []
  /** Loads not yet given room (makeRoom): they take it by priority, then in order of arrival. */
  private readonly awaitingRoom = new Set<Instance>()
  /** Loaded instances whose swap-in waited long enough: they take no new requests, and go once idle (by the swap-in). */
  private readonly swapOuts = new Map<Instance, Instance>()
  /** Pinned models whose load found no room: loaded again when another model unloads (swap-policy.ts). */
  private readonly pinnedToReload = new Map<string, Purpose>()
  private readonly swaps: SwapPolicy
  /** A model's context, grown for a prompt that did not fit: later loads that fix no num_ctx get at least this. */
  private readonly contextFloors = new Map<string, ContextPlan>()
  private closing = false
  /** Loads, failures, evictions, crashes and each request's first token and token counts, for observers (metrics). */
  readonly events: EventHub<SchedulerEvents>
  /** Load and request times measured per model: the expected waits of /api/ps and streamed progress. */
  private readonly estimate = new WaitEstimate()

  constructor (private readonly deps: {
    store: SchedulerStore
    runtimes: SchedulerRuntimes
    settings: SchedulerSettings
    ensureVariant?: EnsureVariant
    /** The RPC workers models may be split across (config.yaml's rpc.workers). */
    rpcWorkers?: SchedulerRpcWorkers
    /** Where a generating runtime's slots are saved before it stops and restored from when its model loads again. */
    promptCaches?: PromptCaches
    log: Pick<Logger, 'info' | 'warn' | 'error'>
  }) {
    this.events = new EventHub((err) => deps.log.warn({ err }, 'a scheduler observer failed'))
    this.swaps = new SwapPolicy(deps.settings)
    this.events.on('loaded', (model, purpose, seconds) => this.estimate.loaded(estimateKey(model, purpose), seconds * 1000))
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
    const instances = this.instances.filter((i) => i.model.name === name)
    // Not loaded: room for the request (it loads the model).
    if (instances.length === 0) return { active: 0, limit: 1 }
    return { active: instances.reduce((n, i) => n + i.active + i.queued, 0), limit: instances.reduce((n, i) => n + i.options.num_parallel, 0) }
  }

  /** Loads the model if needed and waits for a slot. @throws ModelNotFoundError, QueueFullError, RuntimeError */
  async acquire (name: string, request: AcquireRequest = {}): Promise<Lease> {
    const started = performance.now()
    const { store, settings } = this.deps
    const model = store.get(name)
    const purpose = request.purpose ?? 'generate'
    checkPurpose(model, purpose)
    let resolved = purposeOptions(model, purpose, resolveOptions({
      defaults: settings.defaultOptions,
      parameters: model.parameters,
      configured: settings.modelOptions.get(model.name)?.options,
      request: request.options,
      overrides: request.overrides,
    }))
    if (resolved.unknown.length > 0) request.log?.warn({ unknown: resolved.unknown }, 'ignoring unknown options')
    resolved = reserveTokens(resolved, request.usage, purpose === 'generate')
    const floor = purpose === 'generate' ? this.contextFloor(model.name, resolved) : undefined
    if (floor) resolved.load = { ...resolved.load, num_ctx: floor.numCtx, num_parallel: floor.numParallel }
    // A pinned model stays: no request's keep_alive unloads it (an explicit unload, expire or stop, still does).
    const keepAliveMs = this.swaps.isPinned(model.name) ? Infinity : request.keepAliveMs
    for (;;) {
      if (this.closing) throw new UnavailableError('the server is shutting down')
      request.signal?.throwIfAborted()
      const instance = this.findInstance(model, resolved, purpose, floor?.numCtx ?? 0) ?? this.startInstance(model, resolved, keepAliveMs, purpose)
      // Only a request that has to wait hears about it (wait-report.ts): a free slot costs it no timer.
      const waiting = request.onWait ? reportWait(instance, this.estimate, started, request.onWait) : null
      let granted: boolean
      try {
        await instance.waitUntilLoaded()
        granted = instance.state === 'loaded' && (instance.tryTake() || await this.waitInLine(instance, request.usage, request.signal, waiting?.ticket))
      } finally {
        waiting?.stop()
      }
      if (!granted) {
        // The instance went away while we waited. After a crash the next request starts a fresh one; after a
        // stop (or shutdown) the waiting requests end with the reason.
        const reason: unknown = instance.signal.reason
        if (reason instanceof RuntimeError) continue
        throw reason ?? new UnavailableError(`model "${model.name}" was unloaded`)
      }
      instance.claim(keepAliveMs)
      return this.lease(instance, resolved, started, request.usage, request.signal)
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
    this.pinnedToReload.delete(model.name) // stopped on purpose: not loaded again by itself
    await Promise.all(this.instances.filter((i) => i.model.name === model.name)
      .map((i) => this.unload(i, new UnavailableError(`model "${model.name}" was stopped`, 'model_stopped'))))
  }

  /**
   * Ollama's `keep_alive: 0` with nothing to generate: unload the model once its requests are done (idle
   * instances go now). Unlike stop, nothing in flight is cut.
   */
  async expire (name: string): Promise<void> {
    const model = this.deps.store.get(name)
    const instances = this.instances.filter((i) => i.model.name === model.name)
    for (const instance of instances) instance.expireWhenIdle()
    await Promise.all(instances.filter((i) => i.idle && i.state === 'loaded').map((i) => this.unload(i, new UnavailableError('keep_alive expired'))))
  }

  /** Stops everything: the app is closing. */
  async unloadAll (): Promise<void> {
    this.closing = true
    await Promise.all([...this.instances].map((i) => this.unload(i, new UnavailableError('the server is shutting down'))))
  }

  /** What is loaded now, for /api/ps: copies, so that nothing outside changes an instance. */
  snapshot (): LoadedModel[] {
    const now = Date.now()
    // An instance still waiting for room has started nothing: it is not a loaded (or loading) model yet.
    return this.instances.filter((i) => i.process !== null).map((i) => ({
      model: i.model,
      purpose: i.purpose,
      state: i.state,
      estimatedBytes: i.estimatedBytes,
      contextLength: i.options.num_ctx,
      parallel: i.options.num_parallel,
      // While busy, a model is due to unload its keep-alive after the current requests end.
      expiresAt: i.expiresAtFrom(now),
      pid: i.process?.pid ?? null,
      backend: i.process?.backend ?? null,
      activeRequests: i.active,
      // Those waiting for the load are in its queue too: they take a slot, in order, once it serves.
      queuedRequests: i.queued + i.awaitingLoad,
      ...this.waitFigures(i, now),
      rpcWorkers: this.workersOf(i.model),
    }))
  }

  /**
   * /api/ps's loading progress and expected wait of an instance: a request arriving now waits for the rest of the load
   * (its earlier loads' median), then behind those queued, unless a slot is free. Null where nothing was measured yet.
   */
  private waitFigures (i: Instance, now: number): Pick<LoadedModel, 'loading' | 'expectedWaitMs'> {
    const key = estimateKey(i.model.name, i.purpose)
    const line = i.queued + i.awaitingLoad
    if (i.state === 'loading') {
      const elapsedMs = now - i.loadStartedAt
      const loadMs = this.estimate.loadMs(key)
      const queueMs = line >= i.options.num_parallel ? this.estimate.queueMs(key, line + 1 - i.options.num_parallel, i.options.num_parallel) : 0
      const expectedWaitMs = loadMs === null || queueMs === null ? null : Math.max(loadMs - elapsedMs, 0) + queueMs
      return { loading: { elapsedMs, expectedMs: loadMs }, expectedWaitMs }
    }
    const free = i.active < i.options.num_parallel && line === 0
    return { loading: null, expectedWaitMs: free ? 0 : this.estimate.queueMs(key, line + 1, i.options.num_parallel) }
  }

  /** The RPC workers a model is split across (config.yaml's models.<name>.rpc); empty for a local one. */
  workersOf (model: Pick<SchedulableModel, 'name'>): string[] {
    return this.deps.settings.modelOptions.get(model.name)?.rpc ?? []
  }

  /**
   * Requests in flight (holding a slot) and queued (waiting for a slot, a load or room to load), by model, over
   * every instance, those still waiting for room included: what a load balancer reads as each model's load.
   */
  requestCounts (): Map<string, { inFlight: number, queued: number }> {
    const counts = new Map<string, { inFlight: number, queued: number }>()
    for (const i of this.instances) {
      const count = counts.get(i.model.name) ?? { inFlight: 0, queued: 0 }
      count.inFlight += i.active
      count.queued += i.queued + i.awaitingLoad
      counts.set(i.model.name, count)
    }
    return counts
  }

  /** The runtimes of the loaded instances, to ask for their own statistics (metrics, slots). */
  loadedRuntimes (): Array<{ model: string, purpose: Purpose, endpoint: RuntimeEndpoint }> {
    return this.instances.filter((i) => i.state === 'loaded' && i.process !== null)
      .map((i) => ({ model: i.model.name, purpose: i.purpose, endpoint: i.process!.endpoint }))
  }

  /** The grown context that applies to a request: one that fixes num_ctx (or num_parallel) itself keeps its own. */
  private contextFloor (model: string, resolved: ResolvedOptions): ContextPlan | undefined {
    const floor = this.contextFloors.get(model)
    if (!floor || resolved.loadRequested.num_ctx !== undefined || resolved.loadRequested.num_parallel !== undefined) return undefined
    return floor.numCtx > resolved.load.num_ctx ? floor : undefined
  }

  /**
   * After the runtime refused a prompt as longer than the instance's context: unless the request fixed num_ctx, the
   * model's later loads get a context that holds the prompt and its reply (context-fit.ts), up to the trained
   * context and what the memory holds. The next acquire then loads it; the smaller instance drains once it has.
   */
  private async fitPrompt (instance: Instance, resolved: ResolvedOptions, promptTokens: number): Promise<FitResult> {
    const { model, options } = instance
    if (resolved.loadRequested.num_ctx !== undefined) return { grown: false, limit: options.num_ctx, why: ' (the request set num_ctx)' }
    const budget = await this.memoryBudget(instance)
    const plan = planContext({
      promptTokens,
      reply: Number(resolved.sampling.max_tokens ?? -1),
      current: { numCtx: options.num_ctx, numParallel: options.num_parallel },
      trained: model.gguf?.context_length,
      fits: ({ numCtx, numParallel }) => estimateInstanceBytes(model, numCtx * numParallel, options.cache_type_k, options.cache_type_v) - model.size <= budget,
    })
    if ('limit' in plan) return { grown: false, limit: plan.limit, why: plan.why }
    const known = this.contextFloors.get(model.name)
    if (!known || plan.numCtx > known.numCtx) this.contextFloors.set(model.name, plan)
    this.deps.log.info({ model: model.name, promptTokens, from: options.num_ctx, to: plan.numCtx, parallel: plan.numParallel }, 'a prompt longer than the context: loading the model with a larger one')
    return { grown: true, contextLength: plan.numCtx }
  }

  /** The bytes a KV cache may take: unbounded below the size worth asking about, else free memory plus every other model's. */
  private async memoryBudget (instance: Instance): Promise<number> {
    const others = this.instances.filter((i) => i !== instance && i.process !== null).reduce((sum, i) => sum + i.estimatedBytes, 0)
    const free = await this.deps.runtimes.freeMemory()
    return Math.max(free + others + instance.estimatedBytes - instance.model.size, CACHE_CHECK_BYTES)
  }

  /** `minContext`: a context grown for an earlier prompt, which a smaller instance no longer serves. */
  private findInstance (model: SchedulableModel, resolved: ResolvedOptions, purpose: Purpose, minContext: number): Instance | undefined {
    // One swapped out for another model takes no new requests: they wait for its next load (swap-policy.ts).
    const candidates = this.instances.filter((i) => i.model.name === model.name && i.purpose === purpose && i.accepting && !this.swapOuts.has(i) &&
      i.options.num_ctx >= minContext && i.fits(resolved.loadRequested, model.format === 'gguf'))
    // A loaded one before one still loading (whose load, asked for with other options, may fail), then the one
    // with the shortest line, so that requests spread over equivalent instances.
    const loading = (i: Instance): number => i.state === 'loaded' ? 0 : 1
    return candidates.sort((a, b) => loading(a) - loading(b) || (a.active + a.queued) - (b.active + b.queued))[0]
  }

  private startInstance (model: SchedulableModel, resolved: ResolvedOptions, keepAliveMs: number | undefined, purpose: Purpose): Instance {
    const load = resolved.load
    const ctxSize = load.num_ctx * load.num_parallel
    const instance = new Instance(model, load, estimateInstanceBytes(model, ctxSize, load.cache_type_k, load.cache_type_v),
      keepAliveMs ?? this.deps.settings.keepAliveMs, purpose)
    this.instances.push(instance)
    this.awaitingRoom.add(instance)
    instance.startLoading(this.bringUp(instance, ctxSize).catch((err) => {
      this.remove(instance)
      // A pinned model that found no room loads again once another model leaves.
      if ((err as { code?: string }).code === 'no_room' && this.swaps.isPinned(model.name) && !this.closing) this.pinnedToReload.set(model.name, purpose)
      throw err
    }))
    return instance
  }

  private async bringUp (instance: Instance, ctxSize: number): Promise<void> {
    const { model, options, purpose } = instance
    const failureKey = `${model.name}\0${purpose}\0${JSON.stringify(Object.entries(options).sort(([a], [b]) => a.localeCompare(b)))}`
    const failure = this.failures.get(failureKey)
    if (failure && failure.retryAt > Date.now()) {
      throw new RuntimeError(`model "${model.name}" failed to start with these load options ${failure.count} time(s); next try in ${Math.ceil((failure.retryAt - Date.now()) / 1000)} s. Last error: ${failure.message}`, [], 'runtime_backoff')
    }
    const workers = this.workersOf(model)
    if (workers.length === 0) await this.refuseWhatCannotFit(instance)
    await this.makeRoom(instance)
    const rpc = workers.length > 0 ? await this.prepareWorkers(instance, workers) : {}
    let path = this.deps.store.ggufPath(model, options.dtype)
    if (path === null && this.deps.ensureVariant) {
      await this.deps.ensureVariant(model, options.dtype)
      path = this.deps.store.ggufPath(this.deps.store.get(model.name), options.dtype)
    }
    if (path === null) {
      throw new GatewayError(409, `model "${model.name}" has no GGUF for dtype ${options.dtype}, and no converter is available`, { code: 'no_gguf' })
    }
    const args = this.deps.settings.modelOptions.get(model.name)?.args
    const caches = purpose === 'generate' ? this.deps.promptCaches : undefined
    // A cache folder that cannot be used (a file in its place, say) means a runtime without saves, not no runtime.
    const cacheDir = await caches?.init() === true ? caches!.dir : null
    const process = this.deps.runtimes.create({
      modelPath: path,
      alias: model.name,
      ctxSize,
      parallel: options.num_parallel,
      nGpuLayers: options.n_gpu_layers,
      threads: options.num_thread,
      cacheTypeK: options.cache_type_k,
      cacheTypeV: options.cache_type_v,
      ...(model.template ? { chatTemplate: model.template } : {}),
      ...purposeFlags(model, purpose, options.num_ctx, this.deps.store.projectorPath(model)),
      ...rpc,
      ...(args?.length ? { extraArgs: modelArgs(args, model, options.dtype, this.deps.store) } : {}),
      ...(cacheDir !== null ? { slotSavePath: cacheDir } : {}),
    })
    instance.attach(process)
    process.onExit((info) => { if (!info.expected) this.onCrash(instance, info.code, info.signal, info.logTail) })
    const spawned = performance.now()
    try {
      await process.start()
    } catch (err) {
      // A start cut short by a stop is not the model's failure: no backoff for it.
      if ((err as { code?: string }).code !== 'runtime_stopped') {
        this.recordFailure(failureKey, err)
        this.events.emit('loadFailed', model.name, purpose, err)
      }
      throw err
    }
    if (instance.state === 'unloading') return // stopped while it loaded
    this.failures.delete(failureKey)
    // Before the first request: llama-server then sends each request to the slot holding its conversation.
    if (caches) await caches.restoreInto(process.endpoint, cacheShape(instance))
    instance.markLoaded()
    const { progressTimeoutMs } = this.deps.settings
    if (progressTimeoutMs !== undefined) {
      instance.watch(new ProgressWatchdog({
        source: process.endpoint,
        timeoutMs: progressTimeoutMs,
        busy: () => instance.active > 0,
        onStuck: (why) => this.onStuck(instance, why),
      }))
    }
    this.events.emit('loaded', model.name, purpose, (performance.now() - spawned) / 1000)
    // Only now do the model's instances with other options finish what they have and go: a load that fails
    // (one client's impossible options) leaves everyone else's instance serving.
    for (const old of this.instances) {
      if (old !== instance && old.model.name === model.name && old.purpose === purpose && old.accepting) {
        old.drain()
        if (old.idle && old.state === 'loaded') void this.unload(old, new UnavailableError('replaced'))
      }
    }
    this.deps.log.info({ model: model.name, purpose, pid: process.pid, ctxSize, parallel: options.num_parallel }, 'model loaded')
  }

  /**
   * A model split across RPC workers: each must answer now (a load on a worker that does not would hang or abort),
   * and its memory is theirs: weights and cache go to their devices, not this machine's.
   * @throws UnavailableError naming the worker that does not answer
   */
  private async prepareWorkers (instance: Instance, workers: string[]): Promise<{ rpcEndpoints: string[], tensorSplit?: number[] }> {
    const { rpcWorkers, settings, log } = this.deps
    if (!rpcWorkers) throw new UnavailableError(`model "${instance.model.name}" is to be split across RPC workers, and this server has none configured`, 'rpc_worker_unavailable')
    const { endpoints, freeBytes } = await rpcWorkers.prepare(workers, instance.model.name)
    if (instance.estimatedBytes > freeBytes) log.warn({ model: instance.model.name, needed: instance.estimatedBytes, free: freeBytes, workers }, 'model may not fit in its RPC workers\' free memory; loading anyway')
    const tensorSplit = settings.modelOptions.get(instance.model.name)?.tensorSplit
    return { rpcEndpoints: endpoints, ...(tensorSplit ? { tensorSplit } : {}) }
  }

  /**
   * Refuses, before anything starts, a load whose KV cache alone is larger than the memory it could ever have:
   * what is free now plus what unloading every other model would free. The weights are left out (llama.cpp maps
   * them, and a model larger than memory can still run from the page cache); the cache is allocated whole.
   * @throws GatewayError 400 naming the options, what they need and what is free
   */
  private async refuseWhatCannotFit (instance: Instance): Promise<void> {
    const cache = instance.estimatedBytes - instance.model.size
    // Asking for free memory costs a cold start an nvidia-smi run on a GPU: only a cache that could matter asks.
    if (cache < CACHE_CHECK_BYTES) return
    const free = await this.deps.runtimes.freeMemory()
    const others = this.instances.filter((i) => i !== instance && i.process !== null).reduce((sum, i) => sum + i.estimatedBytes, 0)
    if (cache <= free + others) return
    const { num_ctx: ctx, num_parallel: parallel, cache_type_k: k, cache_type_v: v } = instance.options
    const trained = instance.model.gguf?.context_length
    throw new GatewayError(400, `options num_ctx ${ctx} × num_parallel ${parallel} need a KV cache of ${formatBytes(cache)} (cache types ${k}/${v}), more than the ${formatBytes(free + others)} of memory this model could have (${formatBytes(free)} free${others > 0 ? `, ${formatBytes(others)} more with every other model unloaded` : ''}); lower num_ctx${trained ? ` (the model was trained with ${trained})` : ''} or num_parallel`, { code: 'insufficient_memory' })
  }

  /**
   * Waits until the instance may load: fewer than max_loaded_models others, and its estimated size within
   * the free memory. Loads take room by priority, then in order of arrival. Idle instances are unloaded in
   * swap-policy.ts's order (pinned and just loaded ones stay); busy ones are waited for, up to the load timeout,
   * and stop taking new requests once the swap wait is over. When nothing else is loaded, the load goes ahead
   * and llama-server decides.
   */
  private async makeRoom (instance: Instance): Promise<void> {
    const { settings, runtimes, log } = this.deps
    const turn = { arrived: Date.now(), deadline: Date.now() + settings.loadTimeoutMs, announced: false }
    const waited = `waited ${Math.round(settings.loadTimeoutMs / 1000)} s`
    try {
      for (;;) {
        // A load behind this one in line does not count against it.
        const others = this.instances.filter((i) => i !== instance && (!this.awaitingRoom.has(i) || this.swaps.isAhead(i, instance, this.instances)))
        // An RPC worker serves one llama-server at a time: a model sharing one with this one must go first.
        const mineWorkers = new Set(this.workersOf(instance.model))
        const sharing = others.filter((i) => this.workersOf(i.model).some((w) => mineWorkers.has(w)))
        if (sharing.length > 0) {
          if (await this.evictIdle(sharing, instance, 'unloading a model from the RPC workers another one needs', turn.deadline)) continue
          if (Date.now() >= turn.deadline) throw new UnavailableError(`no room to load "${instance.model.name}": its RPC workers (${[...mineWorkers].join(', ')}) serve "${sharing[0]!.model.name}", which is busy${this.pinnedNote(sharing)}; ${waited}`, 'no_room')
          await this.waitForRoom(turn.deadline - Date.now())
          continue
        }
        if (mineWorkers.size > 0 && others.length < settings.maxLoadedModels) return // its memory is the workers'
        if (others.length === 0) {
          // Alone, it loads whatever the free memory: llama-server decides. The memory is only asked for the
          // warning, once the start is under way (on a GPU the probe is an nvidia-smi run, tens of milliseconds).
          setImmediate(() => {
            runtimes.freeMemory().then((free) => {
              if (instance.estimatedBytes > free) log.warn({ model: instance.model.name, needed: instance.estimatedBytes, free }, 'model may not fit in free memory; loading anyway')
            }, () => {})
          })
          return
        }
        // At max_loaded_models, one must go whatever the memory: a switch does not wait for a probe (an
        // nvidia-smi run on a GPU) whose answer changes nothing.
        if (others.length < settings.maxLoadedModels && instance.estimatedBytes <= await runtimes.freeMemory()) return
        // Pinned models never leave for another: waiting for them would only end in the same answer.
        if (others.every((i) => this.swaps.isPinned(i.model.name) && !this.awaitingRoom.has(i) && i.state !== 'unloading')) {
          throw new UnavailableError(`no room to load "${instance.model.name}": ${others.map((i) => `"${i.model.name}"`).join(', ')} ${others.length > 1 ? 'are' : 'is'} pinned (config.yaml models.<name>.pinned) and never unloaded for another model (limits.max_loaded_models is ${settings.maxLoadedModels})`, 'no_room')
        }
        // A load ahead in line makes its own room first: this one unloads nothing meanwhile.
        const ahead = others.some((i) => this.awaitingRoom.has(i))
        const lookAgainAt = ahead ? turn.deadline : await this.swapOut(others, instance, turn)
        if (lookAgainAt === 'evicted') continue
        if (Date.now() >= turn.deadline) {
          throw new UnavailableError(`no room to load "${instance.model.name}": ${others.length} model(s) ${ahead ? 'loading or waiting to, ahead of it,' : 'loaded and busy'}${this.pinnedNote(others)} (limits.max_loaded_models is ${settings.maxLoadedModels}); ${waited}`, 'no_room')
        }
        await this.waitForRoom(Math.min(turn.deadline, lookAgainAt) - Date.now())
      }
    } finally {
      this.awaitingRoom.delete(instance)
      // What this load closed for its swap serves again if the load went without it (failed, or room came otherwise).
      for (const [out, into] of this.swapOuts) if (into === instance) this.swapOuts.delete(out)
      // The next load in line may go now.
      this.wakeRoomWaiters()
    }
  }

  /**
   * Makes room as swap-policy.ts says: unloads an idle model that may go, else, once the swap-in's wait is over, closes
   * the busy model in its way to new requests so that its line ends. @returns 'evicted', or when to look again
   */
  private async swapOut (others: Instance[], instance: Instance, turn: { arrived: number, deadline: number, announced: boolean }): Promise<'evicted' | number> {
    // A model with requests while this load waits for room is wanted by two clients at once: min_residency holds for it.
    for (const other of others) if (other.active + other.queued + other.awaitingLoad > 0) other.markContended()
    if (await this.evictIdle(others, instance, 'unloading an idle model to make room', turn.deadline)) return 'evicted'
    const name = instance.model.name
    const movable = this.swaps.evictionOrder(others.filter((i) => i.state === 'loaded' && !this.swaps.isPinned(i.model.name)))
    // The idle one next to go was loaded too recently: it goes when its min_residency is over.
    const resident = movable.find((i) => i.idle)
    const lookAgainAt = resident ? Math.min(turn.deadline, this.swaps.residentUntil(resident, name)) : turn.deadline
    const busy = movable.find((i) => !i.idle && i.model.name !== name)
    if (!busy || this.swapOuts.has(busy)) return lookAgainAt
    const swapAt = this.swaps.swapAt(instance, busy, turn.arrived)
    if (Date.now() >= swapAt) {
      this.deps.log.info({ model: busy.model.name, for: name, active: busy.active, queued: busy.queued }, `${busy.model.name} takes no new requests: it is swapped out for ${name} once those it has are done`)
      this.swapOuts.set(busy, instance)
      this.events.emit('swapOut', busy.model.name, name)
      return lookAgainAt
    }
    if (!turn.announced) {
      turn.announced = true
      this.deps.log.info({ model: busy.model.name, for: name }, `waiting up to ${Math.ceil((swapAt - Date.now()) / 1000)} s for ${busy.model.name}'s requests before swapping it out for ${name}`)
    }
    return Math.min(lookAgainAt, swapAt)
  }

  /** ", pinned: ..." when some of `instances` are pinned (they never leave for another model). */
  private pinnedNote (instances: Instance[]): string {
    const pinned = [...new Set(instances.filter((i) => this.swaps.isPinned(i.model.name)).map((i) => `"${i.model.name}"`))]
    return pinned.length > 0 ? `, pinned: ${pinned.join(', ')}` : ''
  }

  /**
   * Unloads the idle instance among `candidates` that goes first for `instance` (swap-policy.ts: never a pinned one);
   * false when none is idle, or that one is within its min_residency (which gives way at `deadline`: the load does
   * not fail for it). Residency says when the next one goes, not which.
   */
  private async evictIdle (candidates: Instance[], instance: Instance, why: string, deadline: number): Promise<boolean> {
    const now = Date.now()
    const victim = this.swaps.evictionOrder(candidates.filter((i) => i.state === 'loaded' && i.idle && !this.swaps.isPinned(i.model.name)))[0]
    if (!victim || (now < deadline && now < this.swaps.residentUntil(victim, instance.model.name))) return false
    this.deps.log.info({ model: victim.model.name, for: instance.model.name }, why)
    this.events.emit('evicted', victim.model.name, instance.model.name)
    // A request waits on this unload, and the victim is idle: killed at once, not asked to finish.
    await this.unload(victim, new UnavailableError('evicted'), 0)
    return true
  }

  private waitForRoom (timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs)
      function done (): void { clearTimeout(timer); resolve() }
      this.roomWaiters.push(done)
    })
  }

  private wakeRoomWaiters (): void {
    for (const wake of this.roomWaiters.splice(0)) wake()
  }

  /**
   * Queues the request in its API key's line (the key its usage record names, core/request-usage.ts): turns
   * go round the keys (instance.ts). A key with a queue_share may fill only that part of the line.
   */
  private async waitInLine (instance: Instance, usage: RequestUsage | undefined, signal?: AbortSignal, ticket?: object): Promise<boolean> {
    const { queueLength } = this.deps.settings
    if (instance.queued >= queueLength) throw new QueueFullError(instance.model.name)
    const key = usage?.key
    if (key !== undefined && usage?.queueShare !== undefined) {
      const share = Math.max(1, Math.floor(usage.queueShare * queueLength))
      const mine = instance.queuedOf(key)
      if (mine >= share) {
        // One of its own requests ahead has to be served before this one may queue: about one request's time.
        const oneMs = this.estimate.queueMs(estimateKey(instance.model.name, instance.purpose), 1, instance.options.num_parallel) ?? 1000
        throw new TooManyRequestsError(`the API key "${key}" has ${mine} request${mine === 1 ? '' : 's'} waiting for model "${instance.model.name}", its share of the queue ` +
          `(limits.queue_share ${usage.queueShare} in the keys file, of limits.queue_length ${queueLength}: ${share}); retry when one is served`, oneMs / 1000, { limit: share })
      }
    }
    return instance.enqueue(signal, ticket, key)
  }

  /** `started`: when the request asked for a slot (performance.now()). */
  private lease (instance: Instance, resolved: ResolvedOptions, started: number, usage: RequestUsage | undefined, clientSignal?: AbortSignal): Lease {
    let released = false
    const name = instance.model.name
    const books = leaseBooks(name, started, usage, {
      firstToken: (model, seconds) => this.events.emit('firstToken', model, seconds),
      tokens: (model, prompt, generated) => this.events.emit('tokens', model, prompt, generated),
    })
    // Linked by hand and unlinked on release, not AbortSignal.any: the instance's signal lives as long as the
    // model stays loaded, and on Node 20 every AbortSignal.any made from it stays on it (core/linked-signal.ts).
    const linked = clientSignal === undefined ? null : linkedSignal([instance.signal, clientSignal])
    const process = instance.process!
    // A request of a cache group reuses only its group's prompts on the runtime (plugins/security, cache_group).
    const cacheFields = cacheGroupFields(usage?.cacheGroup, process.separatesCaches)
    return {
      model: instance.model,
      endpoint: cacheFields === null ? process.endpoint : process.endpoint.withFields(cacheFields),
      signal: linked?.signal ?? instance.signal,
      loadDurationMs: books.granted - started,
      contextLength: instance.options.num_ctx,
      sampling: resolved.sampling,
      fitPrompt: (promptTokens) => this.fitPrompt(instance, resolved, promptTokens),
      release: () => {
        if (released) return
        released = true
        linked?.unlink()
        this.estimate.served(estimateKey(name, instance.purpose), books.held())
        this.release(instance)
      },
      firstToken: books.firstToken,
      countTokens: books.countTokens,
      countSent: books.countSent,
    }
  }

  private release (instance: Instance): void {
    instance.handOver()
    if (!instance.idle || instance.state !== 'loaded') return
    const expire = (): void => { void this.unload(instance, new UnavailableError('keep_alive expired')) }
    if (instance.unloadsWhenIdle) { expire(); return }
    instance.armExpiry(expire)
    this.wakeRoomWaiters()
  }

  /** `graceMs`: how long llama-server may take to exit on SIGTERM before it is killed (0: killed at once). */
  /** `save`: false for a runtime that cannot answer (stuck): its slots are not asked for. */
  private async unload (instance: Instance, reason: Error, graceMs?: number, save = true): Promise<void> {
    // llama-server finishes its running tasks before it exits on SIGTERM (tens of seconds); requests that we
    // are cutting anyway need not be waited for.
    graceMs ??= instance.active > 0 ? BUSY_STOP_GRACE_MS : undefined
    const served = save && instance.state === 'loaded' && instance.purpose === 'generate' && instance.process !== null
    if (!instance.beginUnload(reason)) return
    try {
      // After its requests were cut (their slots free up at once), before it stops: what it holds outlives it.
      if (served && this.deps.promptCaches) await this.deps.promptCaches.saveFrom(instance.process!.endpoint, cacheShape(instance))
      await instance.process?.stop(graceMs)
    } finally {
      this.remove(instance)
      this.deps.log.info({ model: instance.model.name, reason: reason.message }, 'model unloaded')
    }
  }

  private onCrash (instance: Instance, code: number | null, signal: string | null, logTail: string[]): void {
    if (instance.state !== 'loaded') return // a failed start is reported by start() itself
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
    const last = logTail.filter((l) => l.trim() !== '').slice(-3).join(' | ')
    const error = new RuntimeError(`the runtime of model "${instance.model.name}" ${how}${last ? `: ${last}` : ''}`, logTail, 'runtime_died')
    this.deps.log.error({ model: instance.model.name, code, signal, logTail: logTail.slice(-10) }, 'runtime died')
    this.events.emit('crashed', instance.model.name)
    instance.beginUnload()
    const workers = this.workersOf(instance.model)
    if (workers.length === 0 || !this.deps.rpcWorkers) {
      instance.end(error)
      this.remove(instance)
      return
    }
    // Split across RPC workers, llama-server aborts when one goes: the requests on it are told which one (a
    // refused connection answers in a millisecond; the wait is bounded for a host that went silent).
    // Left in the list meanwhile, unloading: no new request picks it, and those in line hear the reason too.
    void this.deps.rpcWorkers.explainLoss(workers).catch(() => null).then((lost) => {
      instance.end(lost === null ? error : new RuntimeError(`${lost}; the runtime of model "${instance.model.name}" ${how}`, logTail, 'rpc_worker_lost'))
      this.remove(instance)
    })
  }

  /**
   * A busy runtime that stopped moving (progress-watchdog.ts): its requests end with the reason, it is killed, and
   * those in line load the model afresh, as after a crash.
   */
  private onStuck (instance: Instance, why: string): void {
    if (instance.state !== 'loaded') return
    const name = instance.model.name
    this.deps.log.error({ model: name, pid: instance.process?.pid, why }, 'runtime stuck: stopping it')
    this.events.emit('crashed', name)
    const error = new RuntimeError(`the runtime of model "${name}" was stuck (${why}), so it was stopped; the model loads again for the next request`, [], 'runtime_stuck')
    void this.unload(instance, error, 0, false)
  }

  private recordFailure (key: string, err: unknown): void {
    const count = (this.failures.get(key)?.count ?? 0) + 1
    const delay = Math.min(BACKOFF_BASE_MS * 2 ** (count - 1), BACKOFF_MAX_MS)
    this.failures.set(key, { count, retryAt: Date.now() + delay, message: (err as Error).message })
  }

  private remove (instance: Instance): void {
    const at = this.instances.indexOf(instance)
    if (at !== -1) this.instances.splice(at, 1)
    instance.beginUnload()
    instance.dismissWaiters()
    this.awaitingRoom.delete(instance)
    this.swapOuts.delete(instance)
    this.wakeRoomWaiters()
    // A runtime that stopped left room: a pinned model that found none may load now.
    if (instance.process !== null) setImmediate(() => this.reloadPinned())
  }

  /**
   * Loads again the pinned models whose load found no room, once no other load waits for it (those asked for by a
   * request go first). One that finds none again waits for the next model to leave.
   */
  private reloadPinned (): void {
    if (this.closing || this.awaitingRoom.size > 0) return
    for (const [name, purpose] of this.pinnedToReload) {
      this.pinnedToReload.delete(name)
      if (this.instances.some((i) => i.model.name === name && i.purpose === purpose)) continue
      this.deps.log.info({ model: name }, 'loading a pinned model again: room came back')
      this.load(name, { purpose }).catch((err: unknown) => this.deps.log.warn({ model: name, err }, 'a pinned model did not load again'))
    }
  }
}

/** What ties an instance's slot caches to the runtimes that can take them back. */
function cacheShape (instance: Instance): CacheShape {
  const { model, options } = instance
  return { model: model.name, digest: model.digest ?? '', dtype: options.dtype, cacheTypeK: options.cache_type_k, cacheTypeV: options.cache_type_v }
}
