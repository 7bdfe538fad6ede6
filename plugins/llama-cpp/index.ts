import fp from 'fastify-plugin'
import { RpcWorkers, RuntimeLauncher, RuntimeRegistry, runtimeProcesses } from '../../runtimes/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hardware, llama.cpp builds, and the build chosen for them. */
    runtimes: RuntimeRegistry
    /** Starts llama-server processes with the chosen build, each on a private socket. */
    launcher: RuntimeLauncher
    /** config.yaml's RPC workers: whether each answers, and its memory. */
    rpcWorkers: RpcWorkers
  }
}

export default fp(async (app) => {
  // Without any build the gateway still starts: `chosen` is null and the reason says how to build one.
  const registry = await RuntimeRegistry.create({ config: app.config, log: app.log })
  app.decorate('runtimes', registry)
  app.decorate('rpcWorkers', new RpcWorkers(app.config.rpc.workers))
  app.decorate('launcher', await RuntimeLauncher.create(registry, app.log, app.config.limits.loadTimeoutMs))
  app.startupNotes.push(registry.summary())
  // The shell the first llama-server will start from, forked now rather than on the first request's path.
  runtimeProcesses.prepareStart()
  // Whatever else happens on close, no llama-server outlives the gateway (the scheduler stops its own first;
  // this catches any other, e.g. one still starting), and then neither does the shell kept for the next start
  // (released after the stops, whose exits would otherwise fork a new one).
  app.addHook('onClose', async () => {
    await app.launcher.close()
    runtimeProcesses.releaseSpare()
  })
}, { name: 'llama-cpp', dependencies: ['security'] })
