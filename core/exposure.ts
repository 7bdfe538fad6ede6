import { isLoopbackHost } from './host-port.js'

export { isLoopbackHost }

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
