import { ServerError } from '../../platform/gateway-client.js'
import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'

export const remove: Command = {
  name: 'rm',
  aliases: ['remove'],
  summary: 'delete models (unloaded first when running)',
  usage: ['llamagate rm <model> [<model>...]'],
  flags: CLIENT_FLAGS,
  options: CLIENT_OPTIONS,
  positionals: { min: 1, max: Infinity },
  positionalsHint: 'expected one or more model names',
  async run ({ positionals, stdout, stderr, client }) {
    // Each name on its own: one that cannot be deleted does not keep the others.
    let failed = 0
    for (const model of positionals) {
      try {
        await client().json('DELETE', '/api/delete', { model })
        stdout.write(`deleted '${model}'\n`)
      } catch (err) {
        if (!(err instanceof ServerError)) throw err
        stderr.write(`llamagate rm: ${err.message}\n`)
        failed++
      }
    }
    return failed === 0 ? 0 : 1
  },
}
