import { readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import fp from 'fastify-plugin'
import type { ModelStore } from '../storage/model-store.js'
import { Converter, type ConvertProgress } from './converter.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** SafeTensors → GGUF with llama.cpp's tools. */
    converter: Converter
    /** Makes (once) and records the GGUF variant of a SafeTensors model for a dtype. */
    ensureVariant: (name: string, dtype: string, opts?: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void }) => Promise<void>
  }
}

/** Converts, then adds the variant to the model's manifest (under the store's lock). */
export function variantMaker (store: ModelStore, converter: Converter) {
  return async (name: string, dtype: string, opts: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void } = {}): Promise<void> => {
    const record = store.get(name)
    if (record.format !== 'safetensors' || record.manifest.variants.some((v) => v.dtype === dtype)) return
    const made = await converter.ensure(record.dir, dtype, opts)
    if (!store.get(name).manifest.variants.some((v) => v.dtype === dtype)) {
      await store.addVariant(name, { dtype, file: basename(made.file), size: made.size, sha256: made.sha256 })
    }
  }
}

async function buildSourceOf (binDir: string): Promise<string | null> {
  try {
    return (JSON.parse(await readFile(join(binDir, '..', 'build-info.json'), 'utf8')) as { source?: string }).source ?? null
  } catch {
    return null
  }
}

export default fp(async (app) => {
  const { config } = app
  const build = app.runtimes.chosen?.quantizePath ? app.runtimes.chosen : app.runtimes.builds.find((b) => b.quantizePath)
  const converter = new Converter({
    python: config.conversion.python,
    llamaCppSrc: config.llamaCppSrc,
    // By default, the source tree the runtime was built from: its converter matches its llama-quantize.
    buildSource: build ? await buildSourceOf(build.binDir) : null,
    dataDir: config.dataDir,
    quantizePath: build?.quantizePath ?? null,
    timeoutMs: config.conversion.timeoutMs,
  })
  app.decorate('converter', converter)
  app.decorate('ensureVariant', variantMaker(app.store, converter))
  app.get('/api/convert/status', async () => converter.readiness())
}, { name: 'convert', dependencies: ['storage', 'runtimes'] })
