import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { writeTinyGguf } from './tiny-model.js'

/** `node dist/scripts/make-tiny-model.js --out FILE [--dtype f16|f32] [--seed N] [--layers N --embd N --ff N --heads N]` */
export async function main (args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      out: { type: 'string' }, dtype: { type: 'string', default: 'f16' }, seed: { type: 'string', default: '1' },
      layers: { type: 'string' }, embd: { type: 'string' }, ff: { type: 'string' }, heads: { type: 'string' }, name: { type: 'string' },
    },
  })
  if (!values.out) throw new Error('usage: make-tiny-model --out FILE [--dtype f16|f32] [--seed N] [--layers N] [--embd N] [--ff N] [--heads N]')
  if (values.dtype !== 'f16' && values.dtype !== 'f32') throw new Error(`--dtype must be f16 or f32, not ${values.dtype}`)
  const int = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number.parseInt(v, 10))
  const result = await writeTinyGguf({
    file: values.out, dtype: values.dtype, seed: int(values.seed), nLayer: int(values.layers), nEmbd: int(values.embd),
    nFf: int(values.ff), nHead: int(values.heads), name: values.name,
  })
  process.stdout.write(`wrote ${result.file} (${result.bytes} bytes)\n`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err) => { process.stderr.write(`${(err as Error).message}\n`); process.exit(1) })
}
