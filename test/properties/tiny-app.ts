import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../helpers/app.js'
import { FakeHub } from '../helpers/fake-hub.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The app the property tests of this folder send their requests to.

type Test = Parameters<typeof tempDir>[0]

export interface TinyApp {
  app: FastifyInstance
  /** The tiny GGUF imported as `acme/tiny` (import it again under other names, or after a delete). */
  file: string
  /** A temporary folder of the test's own. */
  dir: string
}

/**
 * The whole app on a temporary data folder with the real CPU llama-server and the tiny model imported as
 * `acme/tiny`, so that the bodies which happen to be valid really run (on one thread, 2 tokens by default).
 */
export async function tinyApp (t: Test, values: Record<string, unknown> = {}): Promise<TinyApp> {
  const runtime = await cpuRuntime()
  // An empty hub on loopback: a pull that passes validation hears "not found" at once (a closed port would
  // have it retry for 20 s), and nothing reaches the network.
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const app = await build(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    hub: { endpoint: hub.url },
    ...values,
    default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1, max_tokens: 2, ...(values.default_options as object) },
  })
  const dir = await tempDir(t, 'llamagate-props-')
  const file = join(dir, 'tiny.gguf')
  await writeTinyGguf({ file, seed: 1 })
  await app.store.import('acme/tiny', file)
  return { app, file, dir }
}
