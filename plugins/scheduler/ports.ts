// What the scheduler needs of its collaborators, stated narrowly so that tests can hand it real services or
// small stand-ins, and so that the store and runtimes can change without touching the scheduler.

import type { Logger } from '../../core/base/logger.js'
import type { EventHub } from '../../core/base/event-hub.js'
import type { LeaseEvents } from '../leases/lease-events.js'
import type { LeaseModel } from '../leases/lease.js'
import type { Options } from '../../core/config/options-schema.js'
import type { ExitInfo, RuntimeEndpoint, RuntimeSpawnOptions } from '../../runtimes/index.js'

// How a llama-server is spawned is the runtimes' to say; the scheduler fills it in.
export type { RuntimeSpawnOptions }

/** The part of a stored model the scheduler reads: what its leases say of it (plugins/leases). */
export type SchedulableModel = LeaseModel

export interface SchedulerStore {
  /** @throws ModelNotFoundError, InvalidModelNameError */
  get(name: string): SchedulableModel
  /** The stored model, or null (no such model, or not a model name: an upstream's may be neither). */
  lookup(name: string): SchedulableModel | null
  /** The GGUF file to load for a dtype, or null when a SafeTensors model has no such variant yet. */
  ggufPath(model: SchedulableModel, dtype?: string): string | null
  /** The vision projector to load beside the model, or null when it has none. */
  projectorPath(model: SchedulableModel): string | null
}

/** Makes a missing GGUF variant of a SafeTensors model (the converter), if one is configured. */
export type EnsureVariant = (model: SchedulableModel, dtype: string, signal?: AbortSignal) => Promise<void>

/** A running llama-server, as the supervisor in runtimes/ provides it. */
export interface RuntimeProcess {
  /**
   * Starts it as far as it goes without taking the model's memory, while the load waits for room (a build with
   * llamagate's `--load-gate`: the process up, the model's metadata and vocabulary read); start() then loads on from
   * there. Resolves at once where the build has no such gate. Absent: nothing is prepared.
   * @throws RuntimeError when it exits before
   */
  prepare?(): Promise<void>
  /** Whether prepare() goes ahead at all (its build has the gate). @default false */
  readonly preparesAhead?: boolean
  /** How long its preparation took, from the spawn to the gate, once there; null before (or never prepared). */
  readonly preparedInMs?: number | null
  start(signal?: AbortSignal): Promise<void>
  stop(graceMs?: number): Promise<void>
  onExit(listener: (info: ExitInfo) => void): void
  /** How requests reach it, once started. */
  readonly endpoint: RuntimeEndpoint
  readonly pid: number | undefined
  /** The backend of the build it runs (`cpu`, `cuda`): a model loaded before a GPU build was chosen keeps its own. */
  readonly backend: string
  /** Its build takes a request's `cache_salt` (runtimes/build/patches): cache groups can share it. */
  readonly separatesCaches: boolean
  /** What its slot saves carry: context checkpoints, and the RAM prompt cache's conversations (the patch set). */
  readonly saves: { checkpoints: boolean, cachedPrompts: boolean }
}

export interface SchedulerRuntimes {
  /** Bytes free for models right now on the chosen backend's memory. */
  freeMemory(): Promise<number>
  /** Starts nothing yet: returns a process to be started. @throws RuntimeError when no build exists */
  create(options: RuntimeSpawnOptions): RuntimeProcess
  /** Whether its runtimes can be started ahead while a load waits for room (RuntimeProcess.prepare). @default false */
  preparesAhead?(): boolean
}

export interface SchedulerSettings {
  keepAliveMs: number
  maxLoadedModels: number
  queueLength: number
  loadTimeoutMs: number
  /** A busy runtime that answers nothing, or moves no slot on, this long is stopped (progress-watchdog.ts); none: never. */
  progressTimeoutMs?: number
  /**
   * When models do not fit together, requests for the loaded one go before a swap away from it for at most this long
   * (swap-costs.ts: the costs decide within it). @default 0
   */
  swapWaitMs?: number
  /** A model just loaded is not unloaded for another one sooner than this (a floor under the costs). @default 0 */
  minResidencyMs?: number
  /** A load waiting for room that this many swaps of other models went ahead of goes first. @default unbounded */
  maxPassedOver?: number
  /** Runtimes are prepared while their load waits for room, and stand by for models given up (RuntimeProcess.prepare). @default true */
  prepareAhead?: boolean
  defaultOptions: Options
  /**
   * config.yaml's `models`: options and llama-server arguments per model (model file items: names or absolute paths),
   * and its place when models do not fit together (`priority`, `pinned`: swap-policy.ts).
   */
  modelOptions: ReadonlyMap<string, { options?: Options, args?: string[], rpc?: string[], tensorSplit?: number[], priority?: number, pinned?: boolean }>
}

/** The RPC workers of config.yaml, as the scheduler needs them (runtimes/rpc knows how to reach them). */
export interface SchedulerRpcWorkers {
  /**
   * Checks that each named worker answers now.
   * @returns the endpoints to pass to llama-server, and the memory their devices have free
   * @throws UnavailableError naming a worker that does not answer
   */
  prepare(names: readonly string[], model: string): Promise<{ endpoints: string[], freeBytes: number }>
  /** After a crash: the worker that is gone, in a sentence, or null when every one answers. */
  explainLoss(names: readonly string[]): Promise<string | null>
}

/** What the scheduler is made with. */
export interface SchedulerDeps {
  store: SchedulerStore
  runtimes: SchedulerRuntimes
  settings: SchedulerSettings
  ensureVariant?: EnsureVariant
  /** The RPC workers models may be split across (config.yaml's rpc.workers). */
  rpcWorkers?: SchedulerRpcWorkers
  /** Where its leases tell their first token and tokens (the lease router's events). @default a hub of its own */
  leaseEvents?: EventHub<LeaseEvents>
  /** Where a generating runtime's slots are saved before it stops and restored from when its model loads again. */
  promptCache?: SchedulerPromptCache
  /**
   * The monotonic clock (ms) that loads are timed by: what the costs learn, and so which models stand by.
   * @default performance.now
   */
  clock?: () => number
  log: Pick<Logger, 'info' | 'warn' | 'error'>
}

/**
 * What ties a runtime's saved slots to a runtime that can take them back: the model file, the KV cache's types, and
 * the number of slots (a state file holds the cache's stream count, one per slot: llama.cpp refuses it in another).
 */
export interface CacheShape { model: string, digest: string, dtype: string, cacheTypeK: string, cacheTypeV: string, parallel: number }

/** A generating runtime as the prompt cache sees it: how to reach it, and what its slot saves carry. */
export type CachingRuntime = Pick<RuntimeProcess, 'endpoint' | 'saves'>

/** The restores into one runtime, each judged by the first task its slot takes: looked at again after each request. */
export interface RestoreJudge {
  /** No restored slot is left to judge. */
  readonly done: boolean
  /** Never throws. */
  check(): Promise<void>
  /** Its runtime is about to stop: a last look while it answers, then what no request took is judged unused. Never throws. */
  stop(): Promise<void>
}

/**
 * Prompt caches that outlive a runtime (the prompt-cache plugin): saved from a generating runtime before it stops,
 * restored into a fresh one of the same shape before its first request, each restore judged.
 */
export interface SchedulerPromptCache {
  /** The folder a generating runtime saves its slots into (`--slot-save-path`); null when unusable. Never throws. */
  slotSavePath(): Promise<string | null>
  /** Saves what a runtime about to stop holds that is worth keeping. Never throws. */
  saveFrom(runtime: CachingRuntime, shape: CacheShape): Promise<void>
  /** Restores this shape's saves into a fresh runtime's slots; null when none was restored. Never throws. */
  restoreInto(runtime: CachingRuntime, shape: CacheShape): Promise<RestoreJudge | null>
  /** Deletes every save of a model (it is being deleted, its runtimes stopped). */
  dropModel(model: string): Promise<void>
}
