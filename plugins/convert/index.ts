import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { Converter } from './converter.js'
import { converterFor } from './converter-for.js'
import { ConverterPreparation } from './converter-preparation.js'
import { variantMaker, type EnsureVariant } from './variant-maker.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** SafeTensors → GGUF with llama.cpp's tools. */
    converter: Converter
    /** A SafeTensors model's GGUF variant, made once and recorded (variant-maker.ts). */
    ensureVariant: EnsureVariant
    /** The start's background install of what the converter lacks (conversion.auto_setup). */
    converterPreparation: ConverterPreparation
  }
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
