import { resolve } from 'node:path'
import type { Command } from '../../core/cli/commands/command.js'
import { ServerUnreachableError } from '../../core/platform/gateway-client.js'

/**
 * Registers a GGUF on disk. Through the running server when one answers (its `/api/import`): the model lands in
 * the store that server reads, whatever home this shell would pick. With no server, or with `--models`, straight
 * into the store on disk, and it says which folder: a server started later with another home would not see it.
 */
export const importCommand: Command = {
  name: 'import',
  summary: 'register a GGUF already on disk, linked rather than copied',
  usage: ['llamagate import <owner>/<name> <file.gguf> [--mmproj FILE] [--host URL] [--config FILE] [--models DIR]'],
  flags: [
    '--mmproj FILE    a vision projector to load beside the model',
    '--host URL       the server to register it with (default: LLAMAGATE_HOST, else config.yaml\'s host and port);',
    '                 the paths are read on the server\'s machine',
    '--config FILE    config file that says where the server is, and where models live when none answers',
    '--models DIR     register into this models folder directly, server or not',
  ],
  options: { host: { type: 'string' }, config: { type: 'string' }, models: { type: 'string' }, mmproj: { type: 'string' } },
  positionals: { min: 2, max: 2 },
  positionalsHint: 'expected <owner>/<name> <file.gguf>',
  async run ({ values, positionals, stdout, stderr, client }) {
    const [name, file] = positionals as [string, string]
    const { mmproj, config, models } = values as { mmproj?: string, config?: string, models?: string }
    const path = resolve(file)
    const projector = mmproj !== undefined ? resolve(mmproj) : undefined
    let unreachable: ServerUnreachableError | undefined
    const server = models === undefined ? client() : null
    // `port: 0` (a server that takes any free port) names no address to ask: the config's folder is the answer.
    if (server !== null && !anyPort(server.url)) {
      try {
        const tag = await server.json<{ name: string, size: number }>('POST', '/api/import', { model: name, path, ...(projector !== undefined ? { projector } : {}) })
        stdout.write(`imported ${tag.name} (${tag.size} bytes) through the server at ${server.url}\n`)
        return 0
      } catch (err) {
        // Only a server that is not there sends the model to the store on disk: one that refuses it says why.
        if (!(err instanceof ServerUnreachableError)) throw err
        unreachable = err
      }
    }
    // Loaded here, not at the top: the client commands must start without the server's modules.
    // With the listed plugins' sections and runtime kinds: a config.yaml that names them is read as `serve` reads it.
    const { loadConfigAndPlugins } = await import('../../core/platform/plugin-manifests.js')
    const { openStore } = await import('./open-store.js')
    const modelsDir = (await loadConfigAndPlugins({ config, models })).config.modelsDir
    const store = await openStore(modelsDir, {
      log: { warn: (message) => stderr.write(`llamagate import: warning: ${String(message)}\n`) },
    })
    const record = await store.import(name, path, projector !== undefined ? { projector } : {}).finally(() => store.close())
    stdout.write(`imported ${record.name} (${record.size} bytes, ${record.manifest.source.link}) into ${record.dir}\n`)
    if (unreachable !== undefined) {
      stdout.write(`no server answered at ${unreachable.url}: registered in the models folder ${modelsDir}; a server reads it if it uses this folder (its data_dir or models setting)\n`)
    }
    return 0
  },
}

function anyPort (url: string): boolean {
  try { return new URL(url).port === '0' } catch { return false }
}
