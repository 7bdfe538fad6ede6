import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir } from './app.js'

type Test = { teardown: (fn: () => unknown) => void }

// Generating a model's random weights costs CPU; a test file asks for the same few seeds again and again.
const made = new Map<number, Promise<Buffer>>()

/**
 * The bytes of a tiny GGUF (seeded, so that two seeds give two files), for a fake hub to serve: generated once
 * per seed in a test process, and each caller gets its own copy.
 */
export async function tinyGgufBytes (t: Test, seed: number): Promise<Buffer> {
  let bytes = made.get(seed)
  if (bytes === undefined) {
    bytes = generate(t, seed)
    made.set(seed, bytes)
    bytes.catch(() => made.delete(seed))
  }
  return Buffer.from(await bytes)
}

async function generate (t: Test, seed: number): Promise<Buffer> {
  const { file } = await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf'), seed })
  return readFile(file)
}
