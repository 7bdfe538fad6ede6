import type { UpstreamConfig } from '../../core/config.js'
import { RuntimeEndpoint } from '../endpoint/runtime-endpoint.js'

/**
 * The endpoint that speaks to one model of an upstream as to a local runtime: its URL (and path), its own key as
 * a Bearer token, the model's own name in every body, and as many kept connections as it may take requests.
 * Its errors are the gateway's runtime errors, with the key cut out of any message.
 */
export function upstreamEndpoint (u: UpstreamConfig, remoteModel: string): RuntimeEndpoint {
  return new RuntimeEndpoint({
    name: `${remoteModel} (upstream ${u.name})`,
    address: { baseUrl: u.url, socketPath: null },
    slots: u.maxConcurrent,
    ...(u.key !== null ? { headers: { authorization: `Bearer ${u.key}` } } : {}),
    model: remoteModel,
  })
}
