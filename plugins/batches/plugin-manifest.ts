import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The Batch APIs' config section: their `limits` (config-section.ts). */
export const manifest: PluginManifest = {
  name: 'batches',
  config: async () => (await import('./config-section.js')).section,
}
