import { realpathSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadBuiltinKeys } from '../../core/platform/plugin-manifests.js'
import { ModelStore } from '../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../fixtures/tiny-model.js'

export const DEMO_MODEL = 'llamagate/tiny-demo'

/** Offers the tiny demo model on a fresh install, so that a chat works with no network. */
async function main (): Promise<void> {
  // Its models folder only: the core's keys, so a plugin's keys or runtime kind need no plugin loaded.
  const config = loadBuiltinKeys()
  const store = new ModelStore(config.modelsDir)
  await store.init()
  if (store.find(DEMO_MODEL)) return
  const dir = join(config.dataDir, 'demo')
  await mkdir(dir, { recursive: true })
  const { file } = await writeTinyGguf({ file: join(dir, 'tiny-demo.gguf'), name: 'tiny-demo' })
  await store.import(DEMO_MODEL, file)
  process.stdout.write(`[demo] imported ${DEMO_MODEL} (random weights: it answers gibberish, fast)\n`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err) => { process.stderr.write(`[demo] ${(err as Error).message}\n`); process.exit(1) })
}
