export { RuntimeEndpoint, type RuntimeAddress, type RuntimeEndpointOptions } from './runtime-endpoint.js'
export type { RelayProgress, RelaySink } from './stream-relay.js'
export { runtimeSampling } from './sampling-params.js'
export { answerUsage, USAGE_TAIL_BYTES, type AnswerUsage } from './answer-usage.js'
