import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_FLAG, JSON_OPTION, type Command } from './command.js'
import { formatBytes, relativeTime, table } from './human.js'
import { shortId } from './list.js'

interface Running {
  name: string, digest: string, size: number, size_vram: number, context_length: number, expires_at: string,
  state: 'loading' | 'loaded' | 'unloading', purpose: string, runtime: string | null, active_requests: number, queued_requests: number
  /** Absent from an older llamagate's (and Ollama's) answer: those run every model here. */
  where?: 'local' | 'upstream', upstream?: string
}

/** /api/ps says "forever" with a far-future date, as Ollama does. */
const FOREVER_YEAR = 2318

export const ps: Command = {
  name: 'ps',
  summary: 'list the models loaded now',
  usage: ['llamagate ps [--json]'],
  flags: [JSON_FLAG, ...CLIENT_FLAGS],
  options: { ...CLIENT_OPTIONS, ...JSON_OPTION },
  positionals: { min: 0, max: 0 },
  async run ({ values, stdout, client }) {
    const reply = await client().json<{ models: Running[] }>('GET', '/api/ps')
    if (values.json) {
      stdout.write(`${JSON.stringify(reply, null, 2)}\n`)
      return 0
    }
    stdout.write(table(['NAME', 'ID', 'SIZE', 'WHERE', 'PROCESSOR', 'CONTEXT', 'REQUESTS', 'UNTIL'], reply.models.map((m) => {
      const requests = m.queued_requests > 0 ? `${m.active_requests} + ${m.queued_requests} queued` : String(m.active_requests)
      // An upstream's model: nothing of it is here to size, and it is listed only while its requests run.
      if (m.where === 'upstream') return [m.name, '-', '-', `upstream ${m.upstream}`, '-', '-', requests, '-']
      return [
        m.purpose === 'generate' ? m.name : `${m.name} (${m.purpose})`,
        shortId(m.digest),
        formatBytes(m.size),
        m.runtime === null ? 'local' : `local (${m.runtime})`,
        processor(m),
        String(m.context_length),
        requests,
        until(m),
      ]
    })))
    return 0
  },
}

function processor (m: Running): string {
  if (m.size_vram === 0 || m.size === 0) return '100% CPU'
  const gpu = Math.round(100 * m.size_vram / m.size)
  return gpu >= 100 ? `100% GPU (${m.runtime})` : `${100 - gpu}%/${gpu}% CPU/GPU`
}

function until (m: Running): string {
  if (m.state === 'loading') return 'loading...'
  if (m.state === 'unloading') return 'stopping...'
  if (new Date(m.expires_at).getUTCFullYear() >= FOREVER_YEAR) return 'forever'
  return relativeTime(m.expires_at)
}
