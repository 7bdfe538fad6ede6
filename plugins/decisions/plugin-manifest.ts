import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import { decideCommand } from './decide-command.js'

/** The decisions plugin's CLI command: `llamagate decide`. */
export const manifest: PluginManifest = {
  name: 'decisions',
  commands: [decideCommand],
}
