import fp from 'fastify-plugin'
import { ModelStore } from './model-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The models on disk. */
    store: ModelStore
  }
}

export default fp(async (app) => {
  const store = new ModelStore(app.config.modelsDir)
  await store.init()
  app.decorate('store', store)
}, { name: 'storage', dependencies: ['security'] })
