import { ConfigError } from '../../core/config/config-error.js'
import type { Config } from '../../core/platform/config.js'
import { isLoopbackHost } from '../../core/base/host-port.js'
import type { StartCheck } from '../../core/platform/plugin-manifest.js'
import { KeysFileError, readKeysFile } from './keys-file.js'

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

/**
 * `serve`'s check before it starts: off loopback without keys (on the main address or `ollama_listen`, which opens
 * the same routes), a warning, or a refusal when `auth.require_keys_off_loopback` asks for one.
 * @throws ConfigError when the keys file cannot be read
 */
export function exposureCheck (config: Config): StartCheck {
  // A keys file that lists keys (revoked ones too: revoking the last must not open the server) turns keys on.
  let keys: string[]
  try {
    keys = [...config.auth.apiKeys, ...readKeysFile(config.auth.keysFile).keys.map((k) => k.name)]
  } catch (err) {
    if (err instanceof KeysFileError) throw new ConfigError([err.message])
    throw err
  }
  const risk = exposureRisk(config.host, keys) ?? (config.ollamaListen && exposureRisk(config.ollamaListen.host, keys))
  if (risk === null) return {}
  if (config.auth.requireKeysOffLoopback) return { refusal: `${risk} (auth.require_keys_off_loopback is true)` }
  return { warnings: [`${risk}; auth.require_keys_off_loopback: true in config.yaml makes this a refusal to start`] }
}
