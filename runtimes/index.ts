export { LlamaServer, describeExit, type LlamaServerOptions, type ExitInfo } from './llama-server.js'
export { RuntimeRegistry, builtRuntimesDir, choose } from './registry.js'
export { inspectBuild } from './inspect-build.js'
export type { Backend, Device, RuntimeBuild } from './types.js'
