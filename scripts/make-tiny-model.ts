import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { TinyLlamaOptions } from './tiny-llama.js'
import { writeTinyGguf, writeTinySafetensors } from './tiny-model.js'

const USAGE = `usage: node dist/scripts/make-tiny-model.js (--out FILE.gguf | --safetensors DIR | both)
  [--dtype f16|f32] [--seed N] [--layers N] [--embd N] [--ff N] [--heads N] [--kv-heads N] [--ctx N] [--pieces N] [--name NAME]`

/** Writes the tiny Llama as a GGUF (--out), a Hugging Face checkpoint (--safetensors), or both. */
export async function main (args: string[], out: Pick<NodeJS.WritableStream, 'write'> = process.stdout): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      out: { type: 'string' }, safetensors: { type: 'string' }, dtype: { type: 'string' }, seed: { type: 'string' },
      layers: { type: 'string' }, embd: { type: 'string' }, ff: { type: 'string' }, heads: { type: 'string' },
      'kv-heads': { type: 'string' }, ctx: { type: 'string' }, pieces: { type: 'string' }, name: { type: 'string' },
    },
  })
  if (!values.out && !values.safetensors) throw new Error(USAGE)
  if (values.dtype !== undefined && values.dtype !== 'f16' && values.dtype !== 'f32') throw new Error(`--dtype must be f16 or f32, not ${values.dtype}`)
  const int = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined
    if (!/^\d+$/.test(v)) throw new Error(`--${flag} must be a whole number, not ${v}`)
    return Number(v)
  }
  const options: TinyLlamaOptions = {
    dtype: values.dtype, seed: int('seed', values.seed), nLayer: int('layers', values.layers), nEmbd: int('embd', values.embd),
    nFf: int('ff', values.ff), nHead: int('heads', values.heads), nHeadKv: int('kv-heads', values['kv-heads']),
    nCtxTrain: int('ctx', values.ctx), extraPieces: int('pieces', values.pieces), name: values.name,
  }
  if (values.out) {
    const { file, bytes } = await writeTinyGguf({ ...options, file: values.out })
    out.write(`wrote ${file} (${bytes} bytes)\n`)
  }
  if (values.safetensors) {
    const { files } = await writeTinySafetensors({ ...options, dir: values.safetensors })
    out.write(`wrote ${files.join(', ')}\n`)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err) => { process.stderr.write(`${(err as Error).message}\n`); process.exit(1) })
}
