import { resolve } from 'node:path'
import type { Command } from '../../core/commands/command.js'

/**
 * Registers a GGUF on this machine's disk straight into the store, server or not: a running server sees it
 * through the store's change feed.
 */
export const importCommand: Command = {
  name: 'import',
  summary: 'register a GGUF already on disk, linked rather than copied',
  usage: ['llamagate import <owner>/<name> <file.gguf> [--mmproj FILE] [--config FILE] [--models DIR]'],
  flags: [
    '--mmproj FILE    a vision projector to load beside the model',
    '--config FILE    config file that says where models live',
    '--models DIR     models folder',
  ],
  options: { config: { type: 'string' }, models: { type: 'string' }, mmproj: { type: 'string' } },
  positionals: { min: 2, max: 2 },
  positionalsHint: 'expected <owner>/<name> <file.gguf>',
  async run ({ values, positionals, stdout, stderr }) {
    const [name, file] = positionals as [string, string]
    const { mmproj, config, models } = values as { mmproj?: string, config?: string, models?: string }
    // Loaded here, not at the top: the client commands must start without the server's modules.
    const { loadConfig } = await import('../../core/config.js')
    const { openStore } = await import('./open-store.js')
    const store = await openStore(loadConfig({ config, models }).modelsDir, {
      log: { warn: (message) => stderr.write(`llamagate import: warning: ${String(message)}\n`) },
    })
    const record = await store.import(name, resolve(file), mmproj !== undefined ? { projector: resolve(mmproj) } : {}).finally(() => store.close())
    stdout.write(`imported ${record.name} (${record.size} bytes, ${record.manifest.source.link}) into ${record.dir}\n`)
    return 0
  },
}
