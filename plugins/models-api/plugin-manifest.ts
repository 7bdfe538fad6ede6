import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The model surfaces' section of config.yaml (`limits.blob_quota`: config-section.ts). */
export const manifest: PluginManifest = {
  name: 'models-api',
  config: async () => (await import('./config-section.js')).section,
}
