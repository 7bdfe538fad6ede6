import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import { batchCommand } from './batch-command.js'

/** The Batch APIs' config section (their `limits`, config-section.ts) and CLI command, `llamagate batch`. */
export const manifest: PluginManifest = {
  name: 'batches',
  config: async () => (await import('./config-section.js')).section,
  commands: [batchCommand],
}
