import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** Lifecycle's section of config.yaml (`models.<name>.preload`, `.keep_alive`: config-section.ts). */
export const manifest: PluginManifest = {
  name: 'lifecycle',
  config: async () => (await import('./config-section.js')).section,
}
