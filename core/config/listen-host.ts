import type { SectionContext } from './config-section.js'

/**
 * `host` as people write it: a host name or address, or, as Ollama reads OLLAMA_HOST, one with its port
 * (`0.0.0.0:8080`, `[::1]:8080`, `http://0.0.0.0:8080`). Of the port it carries and `port`, the one from the higher
 * layer wins (command line > environment > config file > defaults); two different ones from the same layer are a
 * problem. A bare IPv6 address keeps its colons.
 */
export function listenHost (host: string, port: number, context: Pick<SectionContext, 'problem' | 'sourceOf'>): { host: string, port: number } {
  const written = hostAndPort(host)
  if (written === null) {
    context.problem(`host = ${JSON.stringify(host)} is not allowed: expected a host name or address, with or without its port (from ${context.sourceOf('host')})`)
    return { host, port }
  }
  const name = written.name.replace(/^\[(.*)\]$/, '$1')
  if (written.port === null) return { host: name, port }
  if (written.port > 65535) {
    context.problem(`host = ${JSON.stringify(host)} is not allowed: the port must be 0-65535 (from ${context.sourceOf('host')})`)
    return { host: name, port }
  }
  const hostSource = context.sourceOf('host')
  const portSource = context.sourceOf('port')
  if (layerRank(portSource) > layerRank(hostSource)) return { host: name, port }
  if (layerRank(portSource) === layerRank(hostSource) && written.port !== port) {
    context.problem(`host = ${JSON.stringify(host)} carries port ${written.port}, and port = ${port}: give the port once (from ${hostSource} and ${portSource})`)
  }
  return { host: name, port: written.port }
}

/** The name and the port (null: none) `host` is written with; null when it is a URL that names no server. */
function hostAndPort (host: string): { name: string, port: number | null } | null {
  if (/^https?:\/\//i.test(host)) {
    let url: URL
    try {
      url = new URL(host)
    } catch {
      return null
    }
    if (url.pathname !== '/' || url.search !== '' || url.username !== '') return null
    return { name: url.hostname, port: url.port === '' ? null : Number(url.port) }
  }
  const withPort = /^(\[[^\]\s]*\]|[^:\s[\]]+):([0-9]{1,5})$/.exec(host)
  return withPort === null ? { name: host, port: null } : { name: withPort[1]!, port: Number(withPort[2]) }
}

/** How high the layer a value came from stands: a source is a config file's path, a variable's name or a word. */
function layerRank (source: string): number {
  if (source === 'defaults') return 0
  if (source === 'command line') return 3
  return /^[A-Z][A-Z0-9_]*$/.test(source) ? 2 : 1
}
