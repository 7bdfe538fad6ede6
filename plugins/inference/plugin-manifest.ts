import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The inference plugin's section of config.yaml (`vision`, `limits.schema_*`: config-section.ts). */
export const manifest: PluginManifest = {
  name: 'inference',
  config: async () => (await import('./config-section.js')).section,
}
