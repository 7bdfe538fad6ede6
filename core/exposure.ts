import { isIP } from 'node:net'

/** Whether an address to listen on is reachable only from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost (host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  // An IPv4-mapped loopback (::ffff:127.0.0.1).
  return /^::ffff:127\./.test(bare)
}

/**
 * What binding `host` without API keys means, said at start: every route open to whoever reaches the address,
 * the way thousands of Ollama servers ended up on the internet. Null when the server is loopback-only or keys
 * are set.
 */
export function exposureRisk (host: string, apiKeys: readonly string[]): string | null {
  if (apiKeys.length > 0 || isLoopbackHost(host)) return null
  return `listening on ${host} with no API keys: anyone who can reach this address can use every model, pull, ` +
    'create and delete models. Set auth.api_keys in config.yaml (or LLAMAGATE_API_KEYS), or listen on 127.0.0.1'
}
