import fp from 'fastify-plugin'
import { LlamaServer, RuntimeRegistry } from '../../runtimes/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hardware, llama.cpp builds, and the build chosen for them. */
    runtimes: RuntimeRegistry
  }
}

export default fp(async (app) => {
  const registry = await RuntimeRegistry.create({ config: app.config, log: app.log })
  app.decorate('runtimes', registry)
  app.startupNotes.push(registry.summary())
  app.get('/api/runtimes', async () => registry.describe())
  // Whatever else happens on close, no llama-server outlives the gateway.
  app.addHook('onClose', () => LlamaServer.stopAll())
}, { name: 'runtimes', dependencies: ['security'] })
