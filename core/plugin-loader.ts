import { readFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Config } from './resolved-config.js'
import { PACKAGE_ROOT } from './paths.js'
import type { PluginManifest } from './plugin-manifest.js'

/** An admin plugin named in config.yaml that could not be loaded. */
export class PluginLoadError extends Error {
  constructor (path: string, reason: string, options?: { cause?: unknown }) {
    super(`plugin "${path}" could not be loaded: ${reason}`, options)
    this.name = 'PluginLoadError'
  }
}

/** A built-in plugin as plugins/builtin.json lists it. */
export interface BuiltinPlugin {
  name: string
  /** It has a plugin-manifest.ts (config section, CLI commands, doctor, config and start checks). @default false */
  manifest?: boolean
  /** It has a Fastify plugin to register (its index.ts). @default true */
  server?: boolean
}

/**
 * The built-in plugins, in registration order. The list is data, so that the core names no plugin in its code;
 * each plugin's modules are found beside the core's own (`../plugins/<name>/`), whether run from the sources or
 * from dist/.
 */
function builtinPlugins (): BuiltinPlugin[] {
  const file = join(PACKAGE_ROOT, 'plugins', 'builtin.json')
  return (JSON.parse(readFileSync(file, 'utf8')) as { plugins: BuiltinPlugin[] }).plugins
}

function moduleUrl (plugin: string, file: string): string {
  return new URL(`../plugins/${plugin}/${file}.js`, import.meta.url).href
}

let manifests: Promise<PluginManifest[]> | null = null

/** The built-in plugins' manifests, in their order; loaded once per process. */
export function builtinManifests (): Promise<PluginManifest[]> {
  manifests ??= Promise.all(builtinPlugins().filter((p) => p.manifest === true)
    .map(async (p) => (await import(moduleUrl(p.name, 'plugin-manifest')) as { manifest: PluginManifest }).manifest))
  return manifests
}

/** The built-in Fastify plugins, in registration order. */
export async function builtinServerPlugins (): Promise<FastifyPluginAsync[]> {
  return Promise.all(builtinPlugins().filter((p) => p.server !== false)
    .map(async (p) => (await import(moduleUrl(p.name, 'index')) as { default: FastifyPluginAsync }).default))
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
