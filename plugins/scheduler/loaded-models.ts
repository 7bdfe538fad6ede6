import type { RuntimeEndpoint } from '../../runtimes/index.js'
import { growthCap, servedContext } from './context-fit.js'
import type { Instance, InstanceState } from './instance.js'
import type { Purpose } from '../leases/lease.js'
import type { SchedulableModel } from './ports.js'
import type { SwapReason } from './swap-costs.js'
import type { StandingBy } from './standby-runtimes.js'
import { estimateKey, type CostFigures, type WaitEstimate } from './wait-estimate.js'

/** One loaded (or loading) model as /api/ps shows it: a copy, taken when asked. */
export interface LoadedModel {
  readonly model: SchedulableModel
  /** What the instance was started for. */
  readonly purpose: Purpose
  readonly state: InstanceState
  readonly estimatedBytes: number
  /** Tokens one slot holds now (num_ctx, capped at the trained context as llama-server caps it). */
  readonly contextLength: number
  /** The most contextLength grows to for a longer prompt (context-fit.ts growthCap); contextLength where it cannot grow. */
  readonly maxContextLength: number
  readonly parallel: number
  /** When it unloads if nothing comes (ms since epoch); null while kept forever. */
  readonly expiresAt: number | null
  readonly pid: number | null
  /** The backend its llama-server was started with. */
  readonly backend: string | null
  readonly activeRequests: number
  /** Requests waiting for its load or for a slot. */
  readonly queuedRequests: number
  /** While its llama-server starts: how long it has been (ms) and how long its earlier loads took (median), if any. */
  readonly loading: { elapsedMs: number, expectedMs: number | null } | null
  /** How long a request arriving now would wait for a slot (wait-estimate.ts); null when there is nothing to base it on. */
  readonly expectedWaitMs: number | null
  /** The RPC workers (config names) its layers are split across; empty when it runs here alone. */
  readonly rpcWorkers: string[]
  /** What the scheduler has measured of it, the swap decision's costs (wait-estimate.ts). */
  readonly costs: CostFigures
  /** The model it replaced when it got its room, and why (swap-costs.ts); null when it took free room. */
  readonly swap: { replaced: string, reason: SwapReason } | null
}

/** What is loaded now, for /api/ps: copies, so that nothing outside changes an instance. */
export function loadedModels (instances: readonly Instance[], estimate: WaitEstimate, workersOf: (model: Instance['model']) => string[], swapOf: (instance: Instance) => LoadedModel['swap']): LoadedModel[] {
  const now = Date.now()
  // An instance still waiting for room has started nothing: it is not a loaded (or loading) model yet.
  return instances.filter((i) => i.process !== null).map((i) => ({
    model: i.model,
    purpose: i.purpose,
    state: i.state,
    estimatedBytes: i.estimatedBytes,
    ...contextFigures(i),
    parallel: i.options.num_parallel,
    // While busy, a model is due to unload its keep-alive after the current requests end.
    expiresAt: i.expiresAtFrom(now),
    pid: i.process?.pid ?? null,
    backend: i.process?.backend ?? null,
    activeRequests: i.active,
    // Those waiting for the load are in its queue too: they take a slot, in order, once it serves.
    queuedRequests: i.queued + i.awaitingLoad,
    ...waitFigures(i, estimate, now),
    rpcWorkers: workersOf(i.model),
    costs: estimate.figures(estimateKey(i.model.name, i.purpose), i.model.name),
    swap: swapOf(i),
  }))
}

/** What a slot of the instance holds now (llama-server caps it at the trained context), and the most it grows to. */
function contextFigures (i: Instance): Pick<LoadedModel, 'contextLength' | 'maxContextLength'> {
  const trained = i.model.gguf?.context_length
  const contextLength = servedContext(i.options.num_ctx, trained)
  // Only a generating instance grows (context-growth.ts); embeddings and reranking are cut to what is loaded.
  return { contextLength, maxContextLength: i.purpose === 'generate' ? growthCap(trained, contextLength) : contextLength }
}

/**
 * /api/ps's loading progress and expected wait of an instance: a request arriving now waits for the rest of the load
 * (its earlier loads' median), then behind those queued, unless a slot is free. Null where nothing was measured yet.
 */
function waitFigures (i: Instance, estimate: WaitEstimate, now: number): Pick<LoadedModel, 'loading' | 'expectedWaitMs'> {
  const key = estimateKey(i.model.name, i.purpose)
  const line = i.queued + i.awaitingLoad
  if (i.state === 'loading') {
    const elapsedMs = now - i.loadStartedAt
    const loadMs = estimate.loadMs(key)
    const queueMs = line >= i.options.num_parallel ? estimate.queueMs(key, line + 1 - i.options.num_parallel, i.options.num_parallel) : 0
    const expectedWaitMs = loadMs === null || queueMs === null ? null : Math.max(loadMs - elapsedMs, 0) + queueMs
    return { loading: { elapsedMs, expectedMs: loadMs }, expectedWaitMs }
  }
  const free = i.active < i.options.num_parallel && line === 0
  return { loading: null, expectedWaitMs: free ? 0 : estimate.queueMs(key, line + 1, i.options.num_parallel) }
}

/**
 * Requests in flight (holding a slot) and queued (waiting for a slot, a load or room to load), by model, over every
 * instance, those still waiting for room included: what a load balancer reads as each model's load.
 */
export function requestCounts (instances: readonly Instance[]): Map<string, { inFlight: number, queued: number }> {
  const counts = new Map<string, { inFlight: number, queued: number }>()
  for (const i of instances) {
    const count = counts.get(i.model.name) ?? { inFlight: 0, queued: 0 }
    count.inFlight += i.active
    count.queued += i.queued + i.awaitingLoad
    counts.set(i.model.name, count)
  }
  return counts
}

/** The runtimes of the loaded instances, to ask for their own statistics (metrics, slots). */
export function loadedRuntimes (instances: readonly Instance[]): Array<{ model: string, purpose: Purpose, endpoint: RuntimeEndpoint }> {
  return instances.filter((i) => i.state === 'loaded' && i.process !== null)
    .map((i) => ({ model: i.model.name, purpose: i.purpose, endpoint: i.process!.endpoint }))
}

/**
 * A runtime prepared ahead (RuntimeProcess.prepare): its process and the model's vocabulary, none of the room.
 * `waiting_for_room`: its load waits for a model in its way; `standing_by`: its model was given up for another, and
 * its users' next request loads from it.
 */
export interface PreparedRuntime {
  readonly model: string
  readonly purpose: Purpose
  readonly pid: number | null
  readonly why: 'waiting_for_room' | 'standing_by'
  /** When one standing by is stopped unless a request takes it (ms since epoch); null: kept, or waiting for room. */
  readonly expiresAt: number | null
}

/** The runtimes prepared ahead now, for /api/ps: those of loads waiting for room, then those standing by. */
export function preparedRuntimes (instances: readonly Instance[], standing: readonly StandingBy[]): PreparedRuntime[] {
  return [
    ...instances.filter((i) => (i.life?.state === 'preparing' || i.life?.state === 'prepared') && !i.ending)
      .map((i) => ({ model: i.model.name, purpose: i.purpose, pid: i.life!.process.pid ?? null, why: 'waiting_for_room' as const, expiresAt: null })),
    ...standing.map(({ model, purpose, pid, expiresAt }) => ({ model, purpose, pid, why: 'standing_by' as const, expiresAt })),
  ]
}
