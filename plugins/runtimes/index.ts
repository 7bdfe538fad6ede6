import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { LlamaServer, RuntimeRegistry } from '../../runtimes/index.js'
import { RuntimesReply } from './schemas.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hardware, llama.cpp builds, and the build chosen for them. */
    runtimes: RuntimeRegistry
  }
}

const runtimes: FastifyPluginAsyncTypebox = async (app) => {
  // Without any build the gateway still starts: `chosen` is null and the reason says how to build one.
  const registry = await RuntimeRegistry.create({ config: app.config, log: app.log })
  app.decorate('runtimes', registry)
  app.startupNotes.push(registry.summary())
  // Free memory is read again on each call; the builds and the choice are those made at start.
  app.get('/api/runtimes', { schema: { response: { 200: RuntimesReply } } }, async () => registry.describe(await registry.detectDevices()))
  // The shell the first llama-server will start from, forked now rather than on the first request's path.
  LlamaServer.prepareStart()
  // Whatever else happens on close, no llama-server outlives the gateway (the scheduler stops its own first;
  // this catches any other, e.g. one still starting), and then neither does the shell kept for the next start
  // (released after the stops, whose exits would otherwise fork a new one).
  app.addHook('onClose', async () => {
    await LlamaServer.stopAll()
    LlamaServer.releaseSpare()
  })
}

export default fp(runtimes, { name: 'runtimes', dependencies: ['security'] })
