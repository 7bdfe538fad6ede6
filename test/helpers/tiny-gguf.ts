import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeTinyGguf } from '../../scripts/tiny-model.js'
import { tempDir } from './app.js'

/** The bytes of a tiny GGUF (seeded, so that two seeds give two files), for a fake hub to serve. */
export async function tinyGgufBytes (t: { teardown: (fn: () => unknown) => void }, seed: number): Promise<Buffer> {
  const { file } = await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf'), seed })
  return readFile(file)
}
