import { GatewayError, UnavailableError } from '../../core/base/errors.js'
import type { Instance } from './instance.js'
import type { Purpose } from '../leases/lease.js'
import { modelArgs } from './model-args.js'
import type { CacheShape, RuntimeSpawnOptions, SchedulableModel, SchedulerDeps } from './ports.js'
import { RuntimeLife } from './runtime-life.js'
import { estimateKey, type WaitEstimate } from './wait-estimate.js'

/**
 * Makes an instance's runtime, not started: how it is spawned (its GGUF, converted first when a SafeTensors model has
 * none of its dtype; its arguments; where its slots are saved; the RPC workers it is split across), and its life
 * (runtime-life.ts), whose preparations are measured for the swap decision.
 */
export class RuntimeMaker {
  constructor (private readonly deps: SchedulerDeps & { estimate: WaitEstimate }) {}

  /** Whether loads are prepared ahead here: config.yaml's limits.prepare_ahead, and runtimes that can be. */
  preparesAhead (): boolean {
    return this.deps.settings.prepareAhead !== false && this.deps.runtimes.preparesAhead?.() === true
  }

  /** A runtime for `instance`'s model; `ahead`: made to go to its gate before its room. @throws RuntimeError when no build exists */
  make (instance: Instance, spawn: RuntimeSpawnOptions, ahead: boolean): RuntimeLife {
    const key = estimateKey(instance.model.name, instance.purpose)
    return new RuntimeLife(this.deps.runtimes.create(spawn), { model: instance.model.name, ahead, onPrepared: (ms) => this.deps.estimate.prepared(key, ms) })
  }

  /**
   * How an instance's runtime is spawned.
   * @throws GatewayError 409 when there is no GGUF and no converter
   */
  async spawnOptions (instance: Instance, ctxSize: number, rpc: { rpcEndpoints?: string[], tensorSplit?: number[] }): Promise<RuntimeSpawnOptions> {
    const { model, options, purpose } = instance
    const { store, promptCache } = this.deps
    let path = store.ggufPath(model, options.dtype)
    if (path === null && this.deps.ensureVariant) {
      await this.deps.ensureVariant(model, options.dtype)
      path = store.ggufPath(store.get(model.name), options.dtype)
    }
    if (path === null) {
      throw new GatewayError(409, `model "${model.name}" has no GGUF for dtype ${options.dtype}, and no converter is available`, { code: 'no_gguf' })
    }
    const args = this.deps.settings.modelOptions.get(model.name)?.args
    const caches = purpose === 'generate' ? promptCache : undefined
    // A cache folder that cannot be used (a file in its place, say) means a runtime without saves, not no runtime.
    const cacheDir = caches ? await caches.slotSavePath() : null
    return {
      modelPath: path,
      alias: model.name,
      ctxSize,
      parallel: options.num_parallel,
      nGpuLayers: options.n_gpu_layers,
      threads: options.num_thread,
      cacheTypeK: options.cache_type_k,
      cacheTypeV: options.cache_type_v,
      ...(model.template ? { chatTemplate: model.template } : {}),
      ...purposeFlags(model, purpose, options.num_ctx, store.projectorPath(model)),
      ...rpc,
      ...(args?.length ? { extraArgs: modelArgs(args, model, options.dtype, store) } : {}),
      ...(cacheDir !== null ? { slotSavePath: cacheDir } : {}),
    }
  }

  /**
   * A model split across RPC workers: each must answer now (a load on a worker that does not would hang or abort),
   * and its memory is theirs: weights and cache go to their devices, not this machine's.
   * @throws UnavailableError naming the worker that does not answer
   */
  async workerSplit (instance: Instance, workers: string[]): Promise<{ rpcEndpoints: string[], tensorSplit?: number[] }> {
    const { rpcWorkers, settings, log } = this.deps
    if (!rpcWorkers) throw new UnavailableError(`model "${instance.model.name}" is to be split across RPC workers, and this server has none configured`, 'rpc_worker_unavailable')
    const { endpoints, freeBytes } = await rpcWorkers.prepare(workers, instance.model.name)
    if (instance.estimatedBytes > freeBytes) log.warn({ model: instance.model.name, needed: instance.estimatedBytes, free: freeBytes, workers }, 'model may not fit in its RPC workers\' free memory; loading anyway')
    const tensorSplit = settings.modelOptions.get(instance.model.name)?.tensorSplit
    return { rpcEndpoints: endpoints, ...(tensorSplit ? { tensorSplit } : {}) }
  }
}

/** What ties an instance's slot caches to the runtimes that can take them back. */
export function cacheShape (instance: Instance): CacheShape {
  const { model, options } = instance
  return { model: model.name, digest: model.digest ?? '', dtype: options.dtype, cacheTypeK: options.cache_type_k, cacheTypeV: options.cache_type_v, parallel: options.num_parallel }
}

/**
 * What llama-server needs to serve a purpose: `--mmproj` for a model with a vision projector; for embeddings and
 * reranking their switch, and a physical batch as large as one slot's context, since an input to an encoder
 * must fit in one batch. A chat model embeds by its last token, as decoder-based embedders do and Ollama does.
 */
export function purposeFlags (model: SchedulableModel, purpose: Purpose, numCtx: number, projectorPath: string | null): Partial<RuntimeSpawnOptions> {
  switch (purpose) {
    case 'generate': return projectorPath !== null ? { projectorPath } : {}
    case 'embed': return { embeddings: true, batchSize: numCtx, ...((model.kind ?? 'chat') === 'chat' ? { pooling: 'last' as const } : {}) }
    case 'rerank': return { reranking: true, batchSize: numCtx }
  }
}
