import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_FLAG, JSON_OPTION, type Command } from './command.js'
import { formatBytes, relativeTime, table } from './human.js'

interface Tag { name: string, size: number, modified_at: string, digest: string, format: string }

export const list: Command = {
  name: 'list',
  aliases: ['ls'],
  summary: 'list the models on the server',
  usage: ['llamagate list [--json]'],
  flags: [JSON_FLAG, ...CLIENT_FLAGS],
  options: { ...CLIENT_OPTIONS, ...JSON_OPTION },
  positionals: { min: 0, max: 0 },
  async run ({ values, stdout, client }) {
    const reply = await client().json<{ models: Tag[] }>('GET', '/api/tags')
    if (values.json) {
      stdout.write(`${JSON.stringify(reply, null, 2)}\n`)
      return 0
    }
    stdout.write(table(['NAME', 'ID', 'SIZE', 'FORMAT', 'MODIFIED'], reply.models.map((m) => [
      m.name, shortId(m.digest), formatBytes(m.size), m.format, relativeTime(m.modified_at),
    ])))
    return 0
  },
}

/** The first 12 hex digits of a digest, as Ollama shows IDs. */
export function shortId (digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 12)
}
