import type { PluginManifest } from '../../core/plugin-manifest.js'
import { checkModelArgs } from './config-check.js'
import { rpcWorkerCommand } from './rpc-worker-command.js'

/** The runtimes' CLI command, their doctor checks (hardware, builds, the one chosen) and their config check. */
export const manifest: PluginManifest = {
  name: 'llama-cpp',
  commands: [rpcWorkerCommand],
  async doctor ({ config, shared }) {
    // Loaded here: the CLI reads this manifest to start, and the registry is the server's code.
    const [{ RuntimeRegistry }, { runtimeChecks }] = await Promise.all([import('../../runtimes/registry.js'), import('./doctor-checks.js')])
    const registry = await RuntimeRegistry.create({ config })
    shared.set('runtimes', registry)
    const runtimes = registry.describe()
    return { checks: runtimeChecks(runtimes, config), json: { runtimes }, usable: registry.chosen !== null }
  },
  checkConfig: checkModelArgs,
}
