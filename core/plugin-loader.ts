import { pathToFileURL } from 'node:url'
import { isAbsolute } from 'node:path'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Config } from './config.js'

/** An admin plugin named in config.yaml that could not be loaded. */
export class PluginLoadError extends Error {
  constructor (path: string, reason: string, options?: { cause?: unknown }) {
    super(`plugin "${path}" could not be loaded: ${reason}`, options)
    this.name = 'PluginLoadError'
  }
}

/**
 * Registers the admin plugins of config.yaml, in the order listed, each with its options. A plugin is a
 * module whose default export is a Fastify plugin function (wrapped in fastify-plugin to share decorators).
 */
export async function registerAdminPlugins (app: FastifyInstance, plugins: Config['plugins']): Promise<void> {
  for (const { path, options } of plugins) {
    let module: { default?: unknown }
    try {
      module = await import(isAbsolute(path) ? pathToFileURL(path).href : path)
    } catch (err) {
      throw new PluginLoadError(path, (err as Error).message, { cause: err })
    }
    const plugin = module.default ?? module
    if (typeof plugin !== 'function') {
      throw new PluginLoadError(path, 'its default export is not a Fastify plugin function')
    }
    app.register(plugin as FastifyPluginAsync, options)
  }
}
