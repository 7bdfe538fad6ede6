import type { EventHub } from '../../core/base/event-hub.js'
import { GatewayError, UnavailableError } from '../../core/base/errors.js'
import type { Logger } from '../../core/base/logger.js'
import { formatBytes } from '../../core/base/units.js'
import type { Instance } from './instance.js'
import type { Purpose } from '../leases/lease.js'
import type { SchedulerRuntimes, SchedulerSettings } from './ports.js'
import type { SchedulerEvents } from './scheduler-events.js'
import type { SwapCosts, SwapIn, SwapReason } from './swap-costs.js'
import type { SwapPolicy } from './swap-policy.js'
import { estimateKey, type WaitEstimate } from './wait-estimate.js'

// KV caches below this load without asking whether they fit (llama-server decides, as for any small load).
const CACHE_CHECK_BYTES = 2 ** 30

export interface RoomDeps {
  /** Every instance the scheduler holds, loading, loaded or ending. */
  instances(): readonly Instance[]
  settings: SchedulerSettings
  runtimes: Pick<SchedulerRuntimes, 'freeMemory'>
  swaps: SwapPolicy
  /** The swap decision by measured costs. */
  costs: SwapCosts
  /** Where an unload's time is measured. */
  estimate: WaitEstimate
  /** The RPC workers a model's layers are split across (config names). */
  workersOf(model: Instance['model']): string[]
  /** Ends an idle instance to make room, at once (the one end path). */
  evict(victim: Instance): Promise<void>
  /** Loads a pinned model again (a load without a slot). */
  reload(name: string, purpose: Purpose): Promise<void>
  /** The scheduler is closing: nothing is loaded again. */
  closing(): boolean
  events: EventHub<SchedulerEvents>
  log: Pick<Logger, 'info' | 'warn'>
}

/**
 * Room for a load: at most max_loaded_models, within the free memory. Loads take room by priority, then in order of
 * arrival (one passed over limits.max_passed_over times first); idle instances are unloaded in swap-policy.ts's
 * order (pinned ones stay) when swap-costs.ts says so, at once unless holding one is cheaper; a busy one in the way
 * stops taking new requests once the waiting costs more than the swap (at once, its requests cut, when it runs only
 * background work and a person waits); pinned models that found none load again when room comes.
 */
export class Room {
  /** Woken whenever room may have appeared (an unload, an instance going idle). */
  private waiters: Array<() => void> = []
  /** How many wakes there have been: a look that began before one does not wait for the next. */
  private wakes = 0
  /** Loads not yet given room: they take it by priority, then in order of arrival. */
  private readonly awaiting = new Map<Instance, SwapIn>()
  /** Loaded instances whose swap-in waited long enough: they take no new requests, and go once idle (by the swap-in). */
  private readonly swapOuts = new Map<Instance, { into: Instance, reason: SwapReason }>()
  /** Which model each instance that got its room by a swap replaced, and why (/api/ps). */
  private readonly swappedIn = new WeakMap<Instance, { replaced: string, reason: SwapReason }>()
  /** Pinned models whose load found no room: loaded again when another model unloads. */
  private readonly pinnedToReload = new Map<string, Purpose>()

  constructor (private readonly deps: RoomDeps) {}

  /** A new instance waits for room until `make` gives it. */
  enter (instance: Instance): void { this.awaiting.set(instance, { instance, arrived: Date.now(), passedOver: 0 }) }

  /** The model `instance` replaced when it got its room, and why; null when it took free room. */
  swapOf (instance: Instance): { replaced: string, reason: SwapReason } | null { return this.swappedIn.get(instance) ?? null }

  /** While `instance` waits for room: how long until it loads, by the costs, if one model is in its way; else null. */
  expectedRoomMs (instance: Instance): number | null {
    const swapIn = this.awaiting.get(instance)
    if (swapIn === undefined) return null
    const { swaps } = this.deps
    const resident = swaps.evictionOrder(this.deps.instances().filter((i) => i !== instance && i.state === 'loaded' && !swaps.isPinned(i.model.name)))[0]
    return resident === undefined ? null : this.deps.costs.expectedRoomMs(resident, swapIn, Date.now(), this.othersWaiting(swapIn.instance, resident))
  }

  /** Closed to new requests for a swap-in (they wait for its next load). */
  isSwappedOut (instance: Instance): boolean { return this.swapOuts.has(instance) }

  /** The bytes a KV cache may take: unbounded below the size worth asking about, else free memory plus every other model's. */
  async memoryBudget (instance: Instance): Promise<number> {
    const free = await this.deps.runtimes.freeMemory()
    return Math.max(free + this.othersBytes(instance) + instance.estimatedBytes - instance.model.size, CACHE_CHECK_BYTES)
  }

  /**
   * Refuses, before anything starts, a load whose KV cache alone is larger than the memory it could ever have:
   * what is free now plus what unloading every other model would free. The weights are left out (llama.cpp maps
   * them, and a model larger than memory can still run from the page cache); the cache is allocated whole.
   * @throws GatewayError 400 naming the options, what they need and what is free
   */
  async refuseWhatCannotFit (instance: Instance): Promise<void> {
    const cache = instance.estimatedBytes - instance.model.size
    // Asking for free memory costs a cold start an nvidia-smi run on a GPU: only a cache that could matter asks.
    if (cache < CACHE_CHECK_BYTES) return
    const free = await this.deps.runtimes.freeMemory()
    const others = this.othersBytes(instance)
    if (cache <= free + others) return
    const { num_ctx: ctx, num_parallel: parallel, cache_type_k: k, cache_type_v: v } = instance.options
    const trained = instance.model.gguf?.context_length
    throw new GatewayError(400, `options num_ctx ${ctx} × num_parallel ${parallel} need a KV cache of ${formatBytes(cache)} (cache types ${k}/${v}), more than the ${formatBytes(free + others)} of memory this model could have (${formatBytes(free)} free${others > 0 ? `, ${formatBytes(others)} more with every other model unloaded` : ''}); lower num_ctx${trained ? ` (the model was trained with ${trained})` : ''} or num_parallel`, { code: 'insufficient_memory' })
  }

  /**
   * Waits until the instance may load: fewer than max_loaded_models others, and its estimated size within the free
   * memory. When nothing else is loaded, the load goes ahead and llama-server decides.
   * `firstInLine` is called once, when the load is the next to get room and has to wait for it (a model in its way
   * is busy or held): what it can do before it takes memory is best done then.
   * @throws UnavailableError ('no_room') past the load timeout, or at once when only pinned models are in the way
   */
  async make (instance: Instance, firstInLine?: () => void): Promise<void> {
    const { settings, runtimes, log, swaps } = this.deps
    const turn = { arrived: Date.now(), deadline: Date.now() + settings.loadTimeoutMs, announced: false }
    let given = false
    const waited = `waited ${Math.round(settings.loadTimeoutMs / 1000)} s`
    try {
      for (;;) {
        // Ended while it waited (stopped, shutdown): its start gives up at once, not at the deadline.
        if (instance.ending) return
        // A wake while this look was under way (its awaits let others run) is not lost: it looks again.
        const wakes = this.wakes
        // A load behind this one in line does not count against it.
        const all = this.deps.instances()
        const others = all.filter((i) => i !== instance && (!this.awaiting.has(i) || this.isAhead(i, instance, all)))
        // An RPC worker serves one llama-server at a time: a model sharing one with this one must go first.
        const mineWorkers = new Set(this.deps.workersOf(instance.model))
        const sharing = others.filter((i) => this.deps.workersOf(i.model).some((w) => mineWorkers.has(w)))
        if (sharing.length > 0) {
          if (await this.evictIdle(sharing, instance, 'rpc-workers', turn.deadline)) continue
          if (Date.now() >= turn.deadline) throw new UnavailableError(`no room to load "${instance.model.name}": its RPC workers (${[...mineWorkers].join(', ')}) serve "${sharing[0]!.model.name}", which is busy${this.pinnedNote(sharing)}; ${waited}`, 'no_room')
          await this.wait(turn.deadline - Date.now(), wakes)
          continue
        }
        if (mineWorkers.size > 0 && others.length < settings.maxLoadedModels) { given = true; return } // its memory is the workers'
        if (others.length === 0) {
          given = true
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
        if (others.length < settings.maxLoadedModels && instance.estimatedBytes <= await runtimes.freeMemory()) { given = true; return }
        // Pinned models never leave for another: waiting for them would only end in the same answer.
        if (others.every((i) => swaps.isPinned(i.model.name) && !this.awaiting.has(i) && i.state !== 'unloading')) {
          throw new UnavailableError(`no room to load "${instance.model.name}": ${others.map((i) => `"${i.model.name}"`).join(', ')} ${others.length > 1 ? 'are' : 'is'} pinned (config.yaml models.<name>.pinned) and never unloaded for another model (limits.max_loaded_models is ${settings.maxLoadedModels})`, 'no_room')
        }
        // A load ahead in line makes its own room first: this one unloads nothing meanwhile.
        const ahead = others.some((i) => this.awaiting.has(i))
        const lookAgainAt = ahead ? turn.deadline : await this.swapOut(others, instance, turn)
        if (lookAgainAt === 'evicted') continue
        if (Date.now() >= turn.deadline) {
          throw new UnavailableError(`no room to load "${instance.model.name}": ${others.length} model(s) ${ahead ? 'loading or waiting to, ahead of it,' : 'loaded and busy'}${this.pinnedNote(others)} (limits.max_loaded_models is ${settings.maxLoadedModels}); ${waited}`, 'no_room')
        }
        if (!ahead && firstInLine !== undefined) { firstInLine(); firstInLine = undefined }
        await this.wait(Math.min(turn.deadline, lookAgainAt) - Date.now(), wakes)
      }
    } finally {
      if (given && !instance.ending) this.passOver(instance)
      this.awaiting.delete(instance)
      // What this load closed for its swap serves again if the load went without it (failed, or room came otherwise).
      for (const [out, { into }] of this.swapOuts) if (into === instance) this.swapOuts.delete(out)
      // The next load in line may go now.
      this.wake()
    }
  }

  /** Wakes the loads waiting for room: an unload, or an instance gone idle, may have made some. */
  wake (): void {
    this.wakes++
    for (const wake of this.waiters.splice(0)) wake()
  }

  /** A model stopped on purpose: it is not loaded again by itself. */
  notAgain (name: string): void { this.pinnedToReload.delete(name) }

  /** A load that found no room: a pinned model loads again once another model leaves. */
  noRoomFor (name: string, purpose: Purpose): void {
    if (this.deps.swaps.isPinned(name) && !this.deps.closing()) this.pinnedToReload.set(name, purpose)
  }

  /** An instance left the scheduler: its places go, and the room it held may let a waiting load, or a pinned one, in. */
  forget (instance: Instance, hadRuntime: boolean): void {
    this.awaiting.delete(instance)
    this.swapOuts.delete(instance)
    this.wake()
    if (hadRuntime) setImmediate(() => this.reloadPinned())
  }

  /**
   * Makes room as swap-costs.ts says: unloads an idle model that may go (a closed one at once), else closes the busy
   * model in its way to new requests so that its line ends. @returns 'evicted', or when to look again
   */
  private async swapOut (others: Instance[], instance: Instance, turn: { arrived: number, deadline: number, announced: boolean }): Promise<'evicted' | number> {
    const { swaps, log, events, costs } = this.deps
    // A model with requests while this load waits for room is wanted by two clients at once: min_residency holds for it.
    for (const other of others) if (other.active + other.queued + other.awaitingLoad > 0) other.markContended()
    const name = instance.model.name
    const swapIn = this.awaiting.get(instance) ?? { instance, arrived: turn.arrived, passedOver: 0 }
    const now = Date.now()
    // A load only background work waits for takes free room: an idle model kept for nobody but background work, never
    // one a person used within its keep-alive, nor a busy one.
    const backgroundOnly = instance.peopleAwaitingLoad === 0 && instance.awaitingLoad > 0
    const movable = swaps.evictionOrder(others.filter((i) => i.state === 'loaded' && !swaps.isPinned(i.model.name) && (!backgroundOnly || i.keptOnlyForBackground(now))))
    let lookAgainAt = turn.deadline
    const idle = movable.find((i) => i.idle)
    if (idle !== undefined) {
      const closed = this.swapOuts.get(idle)
      const decision = closed === undefined ? costs.decide(idle, swapIn, now, this.othersWaiting(instance, idle)) : null
      // Past the load's deadline the idle one goes whatever the costs: the load does not fail for a hold.
      const reason = closed?.reason ?? (decision!.go ? decision!.reason : now >= turn.deadline ? 'swap-wait' : null)
      if (reason !== null) {
        await this.give(idle, instance, reason, decision !== null && decision.go ? `${decision.waitCostMs} ms of waiting against a swap's ${decision.swapCostMs} ms` : undefined)
        return 'evicted'
      }
      if (decision !== null && !decision.go) lookAgainAt = Math.min(lookAgainAt, decision.until)
    }
    const busy = movable.find((i) => !i.idle && i.model.name !== name)
    if (!busy || this.swapOuts.has(busy) || backgroundOnly) return lookAgainAt
    if (busy.line.onlyBackground) {
      // A person waits for room only background work holds: it gives way at once, its requests cut (a batch sends
      // them again later) and those in its line sent to wait for its next load, so the wait is one hand-back, not a
      // whole generation.
      log.info({ model: busy.model.name, for: name, active: busy.active }, `${busy.model.name} runs only background work: it is swapped out for ${name}, its requests cut`)
      this.swapOuts.set(busy, { into: instance, reason: 'background' })
      events.emit('swapOut', busy.model.name, name, 'background')
      busy.line.cutBackground()
      busy.line.dismiss()
      return lookAgainAt
    }
    const decision = costs.decide(busy, swapIn, now)
    if (decision.go) {
      log.info({ model: busy.model.name, for: name, active: busy.active, queued: busy.queued, reason: decision.reason, waitCostMs: decision.waitCostMs, swapCostMs: decision.swapCostMs }, `${busy.model.name} takes no new requests: it is swapped out for ${name} once those it has are done (${decision.reason})`)
      this.swapOuts.set(busy, { into: instance, reason: decision.reason })
      events.emit('swapOut', busy.model.name, name, decision.reason)
      return lookAgainAt
    }
    if (!turn.announced) {
      turn.announced = true
      log.info({ model: busy.model.name, for: name, waitCostMs: decision.waitCostMs, swapCostMs: decision.swapCostMs }, `${busy.model.name}'s requests cost less than a swap: ${name} waits up to ${Math.ceil((decision.until - Date.now()) / 1000)} s before it closes`)
    }
    return Math.min(lookAgainAt, decision.until)
  }

  /** Unloads `victim` for `instance` now, measuring how long the unload took (a cost of every later swap). The log line's start is read by the soak and bench reports. */
  private async give (victim: Instance, instance: Instance, reason: SwapReason, costs?: string): Promise<void> {
    const { log, events, estimate } = this.deps
    log.info({ model: victim.model.name, for: instance.model.name, reason, ...(costs !== undefined ? { costs } : {}) }, `unloading an idle model to make room (${reason})`)
    this.swappedIn.set(instance, { replaced: victim.model.name, reason })
    events.emit('evicted', victim.model.name, instance.model.name, reason)
    const started = performance.now()
    await this.deps.evict(victim)
    estimate.unloaded(estimateKey(victim.model.name, victim.purpose), performance.now() - started)
  }

  /**
   * Unloads the idle instance among `candidates` that goes first for `instance` (swap-policy.ts: never a pinned one);
   * false when none is idle, or that one is within its min_residency (which gives way at `deadline`: the load does
   * not fail for it).
   */
  private async evictIdle (candidates: Instance[], instance: Instance, reason: SwapReason, deadline: number): Promise<boolean> {
    const { swaps } = this.deps
    const now = Date.now()
    const victim = swaps.evictionOrder(candidates.filter((i) => i.state === 'loaded' && i.idle && !swaps.isPinned(i.model.name)))[0]
    if (!victim || (now < deadline && now < swaps.residentUntil(victim, instance.model.name))) return false
    await this.give(victim, instance, reason)
    return true
  }

  /** Loads waiting for room: one passed over limits.max_passed_over times first, then swap-policy.ts's order. */
  private isAhead (a: Instance, b: Instance, line: readonly Instance[]): boolean {
    const boundA = this.isBounded(a)
    return boundA !== this.isBounded(b) ? boundA : this.deps.swaps.isAhead(a, b, line)
  }

  private isBounded (instance: Instance): boolean {
    const swapIn = this.awaiting.get(instance)
    return swapIn !== undefined && this.deps.costs.isBounded(swapIn)
  }

  /** `instance` got its room: every load of another model that waited longer was passed over once more. */
  private passOver (instance: Instance): void {
    if (!this.awaiting.has(instance)) return
    // The scheduler's list is in order of arrival (a millisecond clock may not tell two loads apart).
    const line = this.deps.instances()
    const at = line.indexOf(instance)
    for (const other of this.awaiting.values()) {
      if (other.instance.model.name !== instance.model.name && line.indexOf(other.instance) < at) other.passedOver++
    }
  }

  /** The requests waiting for the loads of models other than `instance`'s and `resident`'s. */
  private othersWaiting (instance: Instance, resident: Instance): number {
    let count = 0
    for (const { instance: other } of this.awaiting.values()) {
      if (other.model.name !== instance.model.name && other.model.name !== resident.model.name) count += other.awaitingLoad
    }
    return count
  }

  /** ", pinned: ..." when some of `instances` are pinned (they never leave for another model). */
  private pinnedNote (instances: Instance[]): string {
    const pinned = [...new Set(instances.filter((i) => this.deps.swaps.isPinned(i.model.name)).map((i) => `"${i.model.name}"`))]
    return pinned.length > 0 ? `, pinned: ${pinned.join(', ')}` : ''
  }

  /** Waits for a wake or `timeoutMs`; at once when a wake came since `wakes` was read. */
  private wait (timeoutMs: number, wakes: number): Promise<void> {
    if (this.wakes !== wakes) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs)
      function done (): void { clearTimeout(timer); resolve() }
      this.waiters.push(done)
    })
  }

  private othersBytes (instance: Instance): number {
    return this.deps.instances().filter((i) => i !== instance && i.process !== null).reduce((sum, i) => sum + i.estimatedBytes, 0)
  }

  /**
   * Loads again the pinned models whose load found no room, once no other load waits for it (those asked for by a
   * request go first). One that finds none again waits for the next model to leave.
   */
  private reloadPinned (): void {
    if (this.deps.closing() || this.awaiting.size > 0) return
    for (const [name, purpose] of this.pinnedToReload) {
      this.pinnedToReload.delete(name)
      if (this.deps.instances().some((i) => i.model.name === name && i.purpose === purpose)) continue
      this.deps.log.info({ model: name }, 'loading a pinned model again: room came back')
      this.deps.reload(name, purpose).catch((err: unknown) => this.deps.log.warn({ model: name, err }, 'a pinned model did not load again'))
    }
  }
}
