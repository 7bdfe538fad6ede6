import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The upstreams' section of config.yaml (config-section.ts). */
export const manifest: PluginManifest = {
  name: 'upstreams',
  config: async () => (await import('./config-section.js')).section,
}
