import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The metrics' section of config.yaml (config-section.ts). */
export const manifest: PluginManifest = {
  name: 'metrics',
  config: async () => (await import('./config-section.js')).section,
}
