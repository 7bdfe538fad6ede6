import { basename } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { CONVERTER_DTYPES } from '../../core/options-schema.js'
import type { ModelStore } from '../storage/model-store.js'
import type { Converter, ConvertProgress } from './converter.js'
import { converterFor } from './converter-for.js'
import { ConverterPreparation } from './converter-preparation.js'

export type EnsureVariant = (name: string, dtype: string, opts?: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void }) => Promise<void>

declare module 'fastify' {
  interface FastifyInstance {
    /** SafeTensors → GGUF with llama.cpp's tools. */
    converter: Converter
    /**
     * Makes (once) and records in the manifest the GGUF variant `dtype` of the SafeTensors model `name`;
     * nothing to do for a GGUF model or a variant already recorded. Concurrent callers share one conversion.
     */
    ensureVariant: EnsureVariant
    /** The start's background install of what the converter lacks (conversion.auto_setup). */
    converterPreparation: ConverterPreparation
  }
}

/** Converts, then records the variant in the model's manifest (under the store's cross-process lock). */
function variantMaker (store: ModelStore, converter: Converter): EnsureVariant {
  const has = (name: string, dtype: string): boolean => store.get(name).manifest.variants.some((v) => v.dtype === dtype)
  const make: EnsureVariant = async (name, dtype, opts = {}) => {
    const record = store.get(name)
    dtype = dtype.toLowerCase()
    if (record.format !== 'safetensors' || has(name, dtype)) return
    // A quantized type starts from the f16: make and record that first, so it is listed and counted too.
    if (!(CONVERTER_DTYPES as readonly string[]).includes(dtype) && !has(name, 'f16')) await make(name, 'f16', opts)
    const made = await converter.ensureVariant({ modelDir: record.dir, dtype, ...opts })
    if (!has(name, dtype)) await store.addVariant(name, { dtype, file: basename(made.file), size: made.size, sha256: made.sha256 })
  }
  return make
}

const convert: FastifyPluginAsync = async (app) => {
  const { config, runtimes, store } = app
  const converter = await converterFor(config, runtimes, app.log)
  app.decorate('converter', converter)
  app.decorate('ensureVariant', variantMaker(store, converter))
  const preparation = new ConverterPreparation(converter, { enabled: config.conversion.autoSetup, python: config.conversion.python, dataDir: config.dataDir, log: app.log })
  app.decorate('converterPreparation', preparation)
  // Once listening, not on ready: an app only injected into (tests, tools) has no first run to prepare for.
  app.addHook('onListen', async () => { void preparation.start() })
  // Deleting a model first stops its conversions (their partial files go with them).
  store.onBeforeDelete(async (id) => {
    const dir = store.list().find((r) => r.name.toLowerCase() === id.toLowerCase())?.dir
    if (dir) await converter.cancel(dir)
  })
  // No converter outlives the gateway; each removes its partial output before close resolves.
  app.addHook('onClose', async () => {
    preparation.close()
    await converter.close()
  })
}

export default fp(convert, { name: 'convert', dependencies: ['storage', 'llama-cpp'] })
