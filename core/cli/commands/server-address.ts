import type { ReadConfig } from '../../config/config-layers.js'
import { UsageError } from '../../platform/usage-error.js'

/** The port `llamagate serve` listens on unless told otherwise. */
export const DEFAULT_PORT = 11435

export interface ServerAddress {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:11435`. */
  url: string
  /** Sent as a bearer token when set (`LLAMAGATE_API_KEY`). */
  apiKey: string | undefined
}

/**
 * Where the client commands find the server: `--host URL`, else `LLAMAGATE_HOST` when it is a URL, else the
 * host and port `serve` would listen on (config.yaml, `LLAMAGATE_HOST`, `LLAMAGATE_PORT`), with a wildcard
 * listening address reached through loopback. `readConfig` is passed in only when config.yaml is needed (see
 * `needsConfig`): the configuration's schema takes a noticeable part of a second to load.
 * @throws ConfigError when the configuration it has to read is invalid.
 */
export function serverAddress (
  flags: { host?: string | undefined, config?: string | undefined },
  env: NodeJS.ProcessEnv,
  readConfig: ReadConfig | undefined,
): ServerAddress {
  const apiKey = env.LLAMAGATE_API_KEY || undefined
  if (flags.host !== undefined) return { url: toUrl(flags.host), apiKey }
  if (env.LLAMAGATE_HOST?.includes('://')) return { url: toUrl(env.LLAMAGATE_HOST), apiKey }
  if (readConfig === undefined) throw new Error('the configuration is needed to find the server but was not loaded')
  const config = readConfig({ config: flags.config }, env)
  return { url: toUrl(`${bracketed(reachable(config.host))}:${config.port}`), apiKey }
}

/**
 * A URL from what a person types: `host`, `host:port`, or a URL. As Ollama reads OLLAMA_HOST: a bare host gets the
 * default port, a URL with a scheme its scheme's.
 */
export function toUrl (text: string): string {
  const trimmed = text.trim()
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)
  let url: URL
  try {
    url = new URL(withScheme ? trimmed : `http://${trimmed}`)
  } catch {
    throw new UsageError(`"${text}" is not a server address (expected host, host:port or http://host:port)`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`"${text}" is not an http or https address`)
  if (!withScheme && url.port === '') url.port = String(DEFAULT_PORT)
  url.hostname = reachable(url.hostname)
  return url.origin + url.pathname.replace(/\/+$/, '')
}

/** A listening address that means "every interface" is reached through loopback. */
function reachable (host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1'
  if (host === '::' || host === '[::]') return '[::1]'
  return host
}

function bracketed (host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}


/** Whether serverAddress will read config.yaml for these flags. */
export function needsConfig (flags: { host?: string | undefined }, env: NodeJS.ProcessEnv): boolean {
  return flags.host === undefined && !env.LLAMAGATE_HOST?.includes('://')
}
