import t from 'tap'
import { FakeHub } from '../helpers/fake-hub.js'
import { serveRealisticModels, sharedServer, type InferenceServer } from '../helpers/inference.js'

/** The conformance files' gateway, and the loopback hub its pulls reach. */
export interface ConformanceServer extends InferenceServer { hub: FakeHub }

/**
 * One gateway for every conformance file (STYLE.md: a llama-server per group of files): cases.test.ts runs them in
 * one process, where each realistic model is imported and loaded once rather than once a file, and no file's app
 * closes (stopping every llama-server of the process) while another's is in use. A file run alone makes its own.
 * It serves each surface on both addresses (ollama_listen too) and pulls from a hub on loopback.
 */
export const conformanceServer = sharedServer(async (): Promise<ConformanceServer> => {
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const models = { 'acme/qwen': 'qwen25', 'acme/caller': 'caller', 'acme/r1': 'r1', 'acme/bert': 'bert' } as const
  const server = await serveRealisticModels(t, models, { ollama_listen: '127.0.0.1:0', hub: { endpoint: hub.url, token: null } })
  return { ...server, hub }
})
