export { listUpstreamModels, showUpstreamModel } from './upstream-client.js'
export { UpstreamProbe, type UpstreamProbeLog, type UpstreamProbeOptions, type UpstreamState } from './upstream-probe.js'
export { UpstreamEndpoint, upstreamEndpoint } from './upstream-endpoint.js'
