import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/** The scheduler's config section: its `limits` and `models.<name>.priority`, `.pinned` (config-section.ts). */
export const manifest: PluginManifest = {
  name: 'scheduler',
  config: async () => (await import('./config-section.js')).section,
}
