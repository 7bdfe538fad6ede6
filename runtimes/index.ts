export { LlamaServer, describeExit, type LlamaServerOptions, type ExitInfo, type ServerState, type Logger } from './llama-server.js'
export { RuntimeRegistry, builtRuntimesDir, choose, type RuntimesDescription } from './registry.js'
export { inspectBuild } from './inspect-build.js'
export type { Backend, Device, RuntimeBuild } from './types.js'
