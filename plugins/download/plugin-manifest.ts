import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The hub's section of config.yaml (config-section.ts). */
export const manifest: PluginManifest = {
  name: 'download',
  config: async () => (await import('./config-section.js')).section,
}
