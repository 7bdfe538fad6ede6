export { listUpstreamModels } from './upstream-client.js'
export { UpstreamProbe, type UpstreamProbeLog, type UpstreamProbeOptions, type UpstreamState } from './upstream-probe.js'
export { upstreamEndpoint } from './upstream-endpoint.js'
