import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FakeHub, sha256 } from '../../test/helpers/fake-hub.js'
import { FAULT_MODELS } from './soak-faults.js'
import { writeTinyGguf, writeTinySafetensors } from '../fixtures/tiny-model.js'

// The soak's models: three to chat with (alpha and gamma pulled from a fake hub, beta imported), those the faults
// pull and delete (one a SafeTensors checkpoint for the real converter, one whose download the hub corrupts), and
// with --hostile a long-context one, imported.

export interface SoakHub {
  hub: FakeHub
  /** The folder of the model files (`beta.gguf` and, hostile, `long.gguf` are imported from there). */
  files: string
  /** What a whole download of the epsilon fault's model hashes to. */
  epsilonSha: string
}

/** Writes the models' files into `dir`/files, then starts the fake hub that offers them. */
export async function startSoakHub (dir: string, hostile: boolean): Promise<SoakHub> {
  const files = join(dir, 'files')
  await mkdir(files, { recursive: true })
  const gguf = async (name: string, seedOf: number): Promise<Buffer> => {
    const file = join(files, `${name}.gguf`)
    await writeTinyGguf({ file, seed: seedOf, name })
    return readFile(file)
  }
  const alpha = await gguf('alpha', 1)
  await gguf('beta', 2)
  const gamma = await gguf('gamma', 3)
  const delta = await gguf('delta', 4)
  const epsilon = await gguf('epsilon', 5)
  const corrupt = await gguf('corrupt', 6)
  if (hostile) await writeTinyGguf({ file: join(files, 'long.gguf'), seed: 8, name: 'long', nCtxTrain: 32_768 })
  const checkpoint = join(files, 'tiny-hf')
  await writeTinySafetensors({ dir: checkpoint, seed: 7 })
  const converted = await Promise.all((await readdir(checkpoint)).map(async (f) => ({ path: f, content: await readFile(join(checkpoint, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' })))
  // The gateway's connections to it lapse within a second: a quiet measure waits for them to go.
  const hub = await FakeHub.start({ keepAliveMs: 1000 })
  hub.addRepo('soak/alpha', { files: [{ path: 'alpha-F16.gguf', content: alpha }] })
  hub.addRepo('soak/gamma', { files: [{ path: 'gamma-F16.gguf', content: gamma }] })
  hub.addRepo(FAULT_MODELS.delta, { files: [{ path: 'delta-F16.gguf', content: delta }] })
  hub.addRepo(FAULT_MODELS.epsilon, { files: [{ path: 'epsilon-F16.gguf', content: epsilon }] })
  hub.addRepo(FAULT_MODELS.corrupt, { files: [{ path: 'corrupt-F16.gguf', content: corrupt }] })
  hub.faults.corrupt = new Set([sha256(corrupt)])
  hub.addRepo(FAULT_MODELS.converted, { files: converted })
  return { hub, files, epsilonSha: sha256(epsilon) }
}

/** What each of the fake hub's ports is, to name the gateway's sockets to them. */
export function hubPorts (hub: FakeHub): Record<number, string> {
  // The fake hub's second server, the CDN: its address is the hub's own business, read here to name sockets.
  const cdnUrl = (hub as unknown as { cdnUrl: string }).cdnUrl
  return { [Number(new URL(hub.url).port)]: 'the hub', [Number(new URL(cdnUrl).port)]: 'the CDN' }
}
