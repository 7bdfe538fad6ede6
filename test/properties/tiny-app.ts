import { accessSync, constants } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { build, type tempDir } from '../helpers/app.js'
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
 * Where this folder's apps keep their data: in memory (/dev/shm) where the machine has it. The store syncs each
 * file and manifest it writes, three waits on a real disk per copy, import or delete, thousands in model-bodies;
 * the properties judge answers, not what survives a power cut. Elsewhere the system's temporary folder.
 */
function scratchRoot (): string {
  try {
    accessSync('/dev/shm', constants.W_OK)
    return '/dev/shm'
  } catch {
    return tmpdir()
  }
}

/** A fresh folder under scratchRoot, removed when the test ends. */
async function scratchDir (t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(scratchRoot(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
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
    data_dir: await scratchDir(t, 'llamagate-props-data-'),
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    hub: { endpoint: hub.url },
    ...values,
    default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1, max_tokens: 2, ...(values.default_options as object) },
  })
  // Beside the data (one file system): imports link the tiny model as they do in a real store.
  const dir = await scratchDir(t, 'llamagate-props-')
  const file = join(dir, 'tiny.gguf')
  await writeTinyGguf({ file, seed: 1 })
  await app.store.import('acme/tiny', file)
  return { app, file, dir }
}
