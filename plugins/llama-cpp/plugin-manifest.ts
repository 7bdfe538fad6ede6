import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import { checkModelArgs } from './config-check.js'
import { rpcWorkerCommand } from './rpc-worker-command.js'

/**
 * The runtimes' config section (`rpc`; `models.<name>.args`, `.rpc`, `.tensor_split`: config-section.ts), CLI
 * command, doctor checks (hardware, builds, the one chosen) and config check.
 */
export const manifest: PluginManifest = {
  name: 'llama-cpp',
  config: async () => (await import('./config-section.js')).section,
  commands: [rpcWorkerCommand],
  async doctor ({ config, shared }) {
    // Loaded here: the CLI reads this manifest to start, and the registry is the server's code.
    const [{ RuntimeRegistry }, { GpuRuntimeBuilder }, { planGpuBuild }, { runtimeChecks }] = await Promise.all([
      import('../../runtimes/registry.js'), import('../../runtimes/build/gpu-runtime-builder.js'), import('../../runtimes/build/gpu-build-plan.js'), import('./doctor-checks.js'),
    ])
    const registry = await RuntimeRegistry.create({ config })
    shared.set('runtimes', registry)
    // What a server's background GPU build is doing (its status file), or why there is none; nothing is started.
    const plan = await planGpuBuild({ config, devices: registry.devices, builds: registry.builds, env: registry.probeEnv })
    const builder = new GpuRuntimeBuilder({ plan, registry, dataDir: config.dataDir })
    const runtimes = registry.describe(registry.devices, { status: builder.status(), warning: builder.warning })
    return { checks: runtimeChecks(runtimes, config), json: { runtimes }, usable: registry.chosen !== null }
  },
  checkConfig: checkModelArgs,
}
