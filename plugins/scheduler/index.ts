import { rm } from 'node:fs/promises'
import fp from 'fastify-plugin'
import { Scheduler } from './scheduler.js'
import { runtimeAdapter, storeAdapter } from './adapters.js'
import { createSocketDir } from './socket-dir.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Owns every running model instance: load, slots, keep-alive, eviction, unload. */
    scheduler: Scheduler
  }
}

export default fp(async (app) => {
  const { config } = app
  const socketDir = await createSocketDir()
  const scheduler = new Scheduler({
    store: storeAdapter(app.store),
    runtimes: runtimeAdapter(app.runtimes, app.log, socketDir),
    settings: {
      keepAliveMs: config.keepAliveMs < 0 ? Infinity : config.keepAliveMs,
      maxLoadedModels: config.limits.maxLoadedModels,
      queueLength: config.limits.queueLength,
      loadTimeoutMs: config.limits.loadTimeoutMs,
      defaultOptions: config.defaultOptions,
      modelOptions: config.models,
    },
    // A request for a dtype a SafeTensors model has no GGUF of waits for its conversion.
    ensureVariant: (model, dtype, signal) => app.ensureVariant(model.name, dtype, { signal }),
    log: app.log,
  })
  app.decorate('scheduler', scheduler)
  // Deleting a loaded model unloads it first.
  app.store.onBeforeDelete((id) => scheduler.stop(id))
  // No llama-server may outlive the gateway.
  app.addHook('onClose', async () => {
    await scheduler.unloadAll()
    await rm(socketDir, { recursive: true, force: true })
  })
}, { name: 'scheduler', dependencies: ['storage', 'runtimes', 'convert'] })
