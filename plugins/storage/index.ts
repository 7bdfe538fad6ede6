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
  app.addHook('onClose', async () => { store.close() })
  app.decorate('store', store)
}, { name: 'storage', dependencies: ['security'] })
