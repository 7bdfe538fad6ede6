import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import { keysCommand } from './keys-command.js'

/**
 * The security plugin's config section (`auth`, `cors`, `allowed_hosts`: config-section.ts), its CLI command
 * (`llamagate keys`, keys-command.ts), and `serve`'s check of an address open without keys (exposure.ts).
 */
export const manifest: PluginManifest = {
  name: 'security',
  config: async () => (await import('./config-section.js')).section,
  commands: [keysCommand],
  async startCheck (config) {
    // Loaded here: the CLI reads this manifest to start.
    return (await import('./exposure.js')).exposureCheck(config)
  },
}
