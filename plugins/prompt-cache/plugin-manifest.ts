import type { PluginManifest } from '../../core/platform/plugin-manifest.js'

/**
 * The prompt cache's config section (`prompt_cache`: config-section.ts) and doctor check: its folder, what it holds
 * and what does not belong there.
 */
export const manifest: PluginManifest = {
  name: 'prompt-cache',
  config: async () => (await import('./config-section.js')).section,
  async doctor ({ config }) {
    // Loaded here: the CLI reads this manifest to start.
    const { promptCacheCheck } = await import('./doctor-check.js')
    const { check, found } = await promptCacheCheck(config)
    return { checks: [check], json: { promptCache: found } }
  },
}
