import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'

export const stop: Command = {
  name: 'stop',
  summary: 'unload a running model now (its requests end with an error)',
  usage: ['llamagate stop <model>'],
  flags: CLIENT_FLAGS,
  options: CLIENT_OPTIONS,
  positionals: { min: 1, max: 1 },
  positionalsHint: 'expected one model name',
  async run ({ positionals, stdout, client }) {
    await client().json('POST', '/api/stop', { model: positionals[0] })
    stdout.write(`stopped '${positionals[0]}'\n`)
    return 0
  },
}
