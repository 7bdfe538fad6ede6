import type { PluginManifest } from '../../core/plugin-manifest.js'
import { importCommand } from './import-command.js'

/** The store's CLI command: registering a GGUF already on disk, server or not. */
export const manifest: PluginManifest = {
  name: 'storage',
  commands: [importCommand],
}
