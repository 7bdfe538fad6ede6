import type { PluginManifest } from '../../core/plugin-manifest.js'
import { keysCommand } from './keys-command.js'

/** The security plugin's CLI command: `llamagate keys` (keys-command.ts). */
export const manifest: PluginManifest = {
  name: 'security',
  commands: [keysCommand],
}
