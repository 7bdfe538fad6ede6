import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import { importCommand } from './import-command.js'

/**
 * The store's section of config.yaml (`limits.unused_blob_ttl`: config-section.ts) and CLI command: registering a
 * GGUF already on disk, server or not.
 */
export const manifest: PluginManifest = {
  name: 'storage',
  config: async () => (await import('./config-section.js')).section,
  commands: [importCommand],
}
