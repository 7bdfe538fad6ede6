import type { PluginManifest } from '../../core/plugin-manifest.js'

/**
 * The scheduler's config section (`prompt_cache`, its limits, `models.<name>.priority`, `.pinned`: config-section.ts)
 * and doctor check: the prompt-cache folder, what it holds and what does not belong there.
 */
export const manifest: PluginManifest = {
  name: 'scheduler',
  config: async () => (await import('./config-section.js')).section,
  async doctor ({ config }) {
    // Loaded here: the CLI reads this manifest to start.
    const { promptCacheCheck } = await import('./prompt-cache-check.js')
    const { check, found } = await promptCacheCheck(config)
    return { checks: [check], json: { promptCache: found } }
  },
}
