import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'

export const copy: Command = {
  name: 'cp',
  aliases: ['copy'],
  summary: 'give a model a second name (the files are shared)',
  usage: ['llamagate cp <source> <destination>'],
  flags: CLIENT_FLAGS,
  options: CLIENT_OPTIONS,
  positionals: { min: 2, max: 2 },
  positionalsHint: 'expected <source> <destination>',
  async run ({ positionals, stdout, client }) {
    const [source, destination] = positionals as [string, string]
    await client().json('POST', '/api/copy', { source, destination })
    stdout.write(`copied '${source}' to '${destination}'\n`)
    return 0
  },
}
