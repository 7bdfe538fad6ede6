import type { PluginManifest } from '../../core/plugin-manifest.js'

/** The scheduler's doctor check: the prompt-cache folder, what it holds and what does not belong there. */
export const manifest: PluginManifest = {
  name: 'scheduler',
  async doctor ({ config }) {
    // Loaded here: the CLI reads this manifest to start.
    const { promptCacheCheck } = await import('./prompt-cache-check.js')
    const { check, found } = await promptCacheCheck(config)
    return { checks: [check], json: { promptCache: found } }
  },
}
