import fp from 'fastify-plugin'
import { MAX_TIMER_MS } from '../../core/base/units.js'
import type { ModelStore } from '../storage/model-store.js'
import type { SchedulerStore } from './ports.js'
import { Scheduler } from './scheduler.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Owns every running model instance: load, slots, keep-alive, eviction, unload. */
    scheduler: Scheduler
  }
}

/** The store as the scheduler sees it. */
function storePort (store: ModelStore): SchedulerStore {
  return {
    get: (name) => store.get(name),
    lookup: (name) => store.lookup(name),
    ggufPath: (model, dtype) => store.ggufPath(store.get(model.name), dtype),
    projectorPath: (model) => store.projectorPath(store.get(model.name)),
  }
}

export default fp(async (app) => {
  const { config, promptCache } = app
  const scheduler = new Scheduler({
    store: storePort(app.store),
    runtimes: app.launcher,
    settings: {
      keepAliveMs: config.keepAliveMs < 0 || config.keepAliveMs > MAX_TIMER_MS ? Infinity : config.keepAliveMs,
      maxLoadedModels: config.limits.maxLoadedModels,
      queueLength: config.limits.queueLength,
      loadTimeoutMs: config.limits.loadTimeoutMs,
      progressTimeoutMs: config.limits.progressTimeoutMs,
      swapWaitMs: config.limits.swapWaitMs,
      minResidencyMs: config.limits.minResidencyMs,
      maxPassedOver: config.limits.maxPassedOver,
      prepareAhead: config.limits.prepareAhead,
      defaultOptions: config.defaultOptions,
      modelOptions: config.models,
    },
    // A request for a dtype a SafeTensors model has no GGUF of waits for its conversion.
    ensureVariant: (model, dtype, signal) => app.ensureVariant(model.name, dtype, { signal }),
    rpcWorkers: app.rpcWorkers,
    leaseEvents: app.leases.events,
    ...(promptCache ? { promptCache } : {}),
    log: app.log,
  })
  app.decorate('scheduler', scheduler)
  // The source of every stored model's leases; backends register after it (plugins/upstreams).
  app.leases.serveStored(scheduler)
  // Deleting a loaded model unloads it first, and its saved prompt caches go with it.
  app.store.onBeforeDelete(async (id) => {
    await scheduler.stop(id)
    await promptCache?.dropModel(scheduler.modelName(id))
  })
  // No llama-server may outlive the gateway (the runtimes plugin also stops any left when it closes).
  app.addHook('onClose', () => scheduler.unloadAll())
}, { name: 'scheduler', dependencies: ['storage', 'leases', 'llama-cpp', 'convert', 'prompt-cache'] })
