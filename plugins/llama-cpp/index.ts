import fp from 'fastify-plugin'
import { GpuRuntimeBuilder, planGpuBuild, RpcWorkers, RuntimeLauncher, RuntimeRegistry, runtimeProcesses } from '../../runtimes/index.js'
import { missingPatchCosts, PATCH_FIX } from './patch-costs.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hardware, llama.cpp builds, and the build chosen for them. */
    runtimes: RuntimeRegistry
    /** Starts llama-server processes with the chosen build, each on a private socket. */
    launcher: RuntimeLauncher
    /** config.yaml's RPC workers: whether each answers, and its memory. */
    rpcWorkers: RpcWorkers
    /** The GPU runtime built in the background for a GPU found without one (or why none is). */
    runtimeBuilder: GpuRuntimeBuilder
  }
}

export default fp(async (app) => {
  // Without any build the gateway still starts: `chosen` is null and the reason says how to build one.
  // Its warning waits for the GPU build's plan, which knows whether the toolkit is there.
  const registry = await RuntimeRegistry.create({ config: app.config, log: app.log, warnNow: false })
  const plan = await planGpuBuild({ config: app.config, devices: registry.devices, builds: registry.builds, env: registry.probeEnv })
  const builder = new GpuRuntimeBuilder({ plan, registry, dataDir: app.config.dataDir, source: app.config.llamaCppSrc, log: app.log })
  app.decorate('runtimes', registry)
  app.decorate('runtimeBuilder', builder)
  app.decorate('rpcWorkers', new RpcWorkers(app.config.rpc.workers))
  app.decorate('launcher', await RuntimeLauncher.create(registry, app.log, app.config.limits.loadTimeoutMs))
  app.startupNotes.push(registry.summary())
  if (builder.note !== null) app.startupNotes.push(builder.note)
  const warning = plan.action === 'build' ? null : builder.warning ?? registry.warning
  if (warning !== null) app.log.warn(warning)
  // doctor and /api/runtimes say it too, but a user who starts the server reads this: every cache group's reuse is at stake.
  const { chosen } = registry
  const costs = chosen !== null ? missingPatchCosts(chosen) : []
  if (chosen !== null && costs.length > 0) app.log.warn(`WARNING: the llama-server in ${chosen.binDir} lacks llamagate's patches: ${costs.join('; ')}. To have them: ${PATCH_FIX}`)
  // The shell the first llama-server will start from, forked now rather than on the first request's path.
  runtimeProcesses.prepareStart()
  // Only a gateway that serves builds: an app driven by inject (tests, tools) never starts minutes of compiling.
  app.addHook('onListen', async () => { builder.start() })
  // Whatever else happens on close, no llama-server outlives the gateway (the scheduler stops its own first;
  // this catches any other, e.g. one still starting), and then neither does the shell kept for the next start
  // (released after the stops, whose exits would otherwise fork a new one). A GPU build in progress is killed
  // whole; its install is atomic, so nothing half-made is left.
  app.addHook('onClose', async () => {
    await builder.close()
    await app.launcher.close()
    runtimeProcesses.releaseSpare()
  })
}, { name: 'llama-cpp', dependencies: ['security'] })
