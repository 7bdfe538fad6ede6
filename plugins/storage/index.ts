import fp from 'fastify-plugin'
import { ModelStore } from './model-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The models on disk. */
    store: ModelStore
  }
}

export default fp(async (app) => {
  const store = new ModelStore(app.config.modelsDir, { onWarning: (message) => app.log.warn(message) })
  await store.init()
  // An import by the CLI while the server runs shows up without a restart.
  await store.watchChanges()
  app.addHook('onClose', async () => { store.close() })
  app.decorate('store', store)
}, { name: 'storage', dependencies: ['security'] })
