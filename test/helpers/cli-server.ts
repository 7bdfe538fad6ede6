import { serveRealisticModels, type InferenceServer } from './inference.js'

/**
 * The gateway on a real socket, in the test's own process, with the qwen2-vocabulary fixture imported as
 * acme/qwen, for tests of the client commands: they run the real CLI, which needs only an address to talk to
 * (the `serve` process itself is tested in test/core/serve.test.ts). `values` are config keys on top.
 */
export async function serveForCli (t: { teardown: (fn: () => unknown) => void }, values: Record<string, unknown> = {}): Promise<InferenceServer> {
  return serveRealisticModels(t, { 'acme/qwen': 'qwen25' }, { ...values, default_options: { num_ctx: 512, num_parallel: 1 } })
}
