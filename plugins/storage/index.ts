import fp from 'fastify-plugin'
import type { ModelStore } from './model-store.js'
import { openStore } from './open-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The models on disk. */
    store: ModelStore
  }
}

export default fp(async (app) => {
  // An import by the CLI while the server runs shows up without a restart.
  const store = await openStore(app.config.modelsDir, { log: app.log, followChanges: true, aliases: app.config.aliases })
  // Uploaded blobs no model holds go after limits.unused_blob_ttl: checked at start and every hour.
  const reclaim = (): void => {
    store.blobs.reclaim(app.config.limits.unusedBlobMs)
      .then((removed) => { if (removed.length > 0) app.log.info({ blobs: removed }, 'removed uploaded blobs no model uses') })
      .catch((err: unknown) => { app.log.warn({ err }, 'could not reclaim uploaded blobs') })
  }
  reclaim()
  const reclaiming = setInterval(reclaim, 3_600_000).unref()
  app.addHook('onClose', async () => { clearInterval(reclaiming); store.close() })
  app.decorate('store', store)
}, { name: 'storage', dependencies: ['security'] })
