import { GatewayClient } from '../../platform/gateway-client.js'
import type { ReadConfig } from '../../config/config-layers.js'
import type { OptionValues } from '../../platform/command.js'
import { serverAddress } from './server-address.js'

// A command's contract is the platform's (a plugin's commands use it too); the CLI adds how a client is made.
export * from '../../platform/command.js'

/** A lazily made client: commands that never reach the server never read config.yaml. */
export function clientFor (values: OptionValues, env: NodeJS.ProcessEnv, readConfig: ReadConfig | undefined): () => GatewayClient {
  let client: GatewayClient | undefined
  return () => {
    if (client === undefined) {
      const { url, apiKey } = serverAddress({ host: values.host as string | undefined, config: values.config as string | undefined }, env, readConfig)
      client = new GatewayClient(url, apiKey)
    }
    return client
  }
}
