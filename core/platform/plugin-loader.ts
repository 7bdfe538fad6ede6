import { existsSync, readFileSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { resolve as resolveModule } from 'import-meta-resolve'
import { describeErrors } from '../config/config-problems.js'
import { ajv } from '../base/lazy-require.js'
import { pluginSpec, type PluginSpec } from './plugin-definition.js'
import type { TSchema } from 'typebox'
import type { Config } from '../config/resolved-config.js'
import { PACKAGE_ROOT } from '../base/paths.js'
import type { PluginManifest } from './plugin-manifest.js'

/** An admin plugin named in config.yaml that could not be loaded: the message names it, where from, and why. */
export class PluginLoadError extends Error {
  constructor (plugin: string, reason: string, options?: { cause?: unknown }) {
    super(`plugin ${plugin} could not be loaded: ${reason}`, options)
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
 * each plugin's modules are found beside the core's own (`../../plugins/<name>/`), whether run from the sources or
 * from dist/.
 */
function builtinPlugins (): BuiltinPlugin[] {
  const file = join(PACKAGE_ROOT, 'plugins', 'builtin.json')
  return (JSON.parse(readFileSync(file, 'utf8')) as { plugins: BuiltinPlugin[] }).plugins
}

function moduleUrl (plugin: string, file: string): string {
  return new URL(`../../plugins/${plugin}/${file}.js`, import.meta.url).href
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
 * Registers the admin plugins of config.yaml, in the order listed, each with its options, once the built-in ones
 * are (so that a failure is the plugin's, not a built-in's). A plugin is a module whose default export is a Fastify
 * plugin function, made by `definePlugin` (llamagate/plugin: its options are checked against its schema first) or
 * plain. Every failure stops the start naming the plugin: not found (and where it was looked for), not a function,
 * throws at import, bad options, throws while registering.
 */
export async function registerAdminPlugins (app: FastifyInstance, config: Pick<Config, 'plugins' | 'configFile' | 'dataDir'>): Promise<void> {
  if (config.plugins.length === 0) return
  await app.after()
  for (const [index, { path, options }] of config.plugins.entries()) {
    const { plugin, spec, label } = await importAdminPlugin(path, config)
    const checked = spec?.options !== undefined ? checkOptions(label, spec.options, options, `plugins[${index}].options`) : options
    try {
      await app.register(plugin as FastifyPluginAsync, checked)
    } catch (err) {
      throw new PluginLoadError(label, `it threw while registering: ${(err as Error).message}`, { cause: err })
    }
  }
}

/** An admin plugin of config.yaml, imported: its function, its spec (definePlugin's, else null), how errors name it. */
export interface AdminPlugin { plugin: Function, spec: PluginSpec<TSchema> | null, label: string }

/**
 * Imports the admin plugin at `path` (the module cache makes a second import of it free).
 * @throws PluginLoadError when it is not found, its import throws or its default export is not a function
 */
export async function importAdminPlugin (path: string, config: Pick<Config, 'configFile' | 'dataDir'>): Promise<AdminPlugin> {
  const url = locatePlugin(path, config)
  let module: { default?: unknown }
  try {
    module = await import(url)
  } catch (err) {
    throw new PluginLoadError(`"${path}"`, `importing ${fileURLToPath(url)} threw: ${(err as Error).message}`, { cause: err })
  }
  const plugin = module.default ?? module
  if (typeof plugin !== 'function') {
    throw new PluginLoadError(`"${path}"`, 'its default export is not a Fastify plugin function (see docs/plugins.md: export default definePlugin({ ... }))')
  }
  const spec = pluginSpec(plugin)
  return { plugin, spec, label: spec !== null && spec.name !== path ? `"${spec.name}" (${path})` : `"${path}"` }
}

/**
 * Where a plugin's module is: a path (config.yaml made it absolute) as it is; a package name as Node resolves it
 * from config.yaml's folder (a package installed beside it, or above), then from `<data_dir>/plugins` (where
 * `npm install --prefix <data_dir>/plugins <package>` puts one), then from llamagate's own install.
 * @throws PluginLoadError naming the places it looked
 */
export function locatePlugin (path: string, config: Pick<Config, 'configFile' | 'dataDir'>): string {
  if (isAbsolute(path)) {
    if (!existsSync(path)) throw new PluginLoadError(`"${path}"`, `no file at ${path}`)
    return pathToFileURL(path).href
  }
  const places = [config.configFile !== null ? dirname(config.configFile) : process.cwd(), join(config.dataDir, 'plugins')]
  for (const place of places) {
    try {
      return resolveModule(path, pathToFileURL(join(place, 'config.yaml')).href)
    } catch (err) {
      if (!NOT_THERE.has((err as { code?: string }).code ?? '')) throw new PluginLoadError(`"${path}"`, (err as Error).message, { cause: err })
    }
  }
  try {
    return resolveModule(path, import.meta.url)
  } catch (err) {
    if (!NOT_THERE.has((err as { code?: string }).code ?? '')) throw new PluginLoadError(`"${path}"`, (err as Error).message, { cause: err })
    throw new PluginLoadError(`"${path}"`, `no package of that name is installed beside config.yaml (${places[0]}, or a folder above it), in ${places[1]}, or beside llamagate (${PACKAGE_ROOT}); install it in one of them (npm install --prefix ${places[1]} ${path})`)
  }
}

// What Node's resolution says of a package that is not in the place asked: look in the next.
const NOT_THERE = new Set(['ERR_MODULE_NOT_FOUND', 'ERR_UNSUPPORTED_DIR_IMPORT'])

/** The plugin's options as its schema has them (defaults filled in); @throws PluginLoadError naming each bad one */
function checkOptions (label: string, schema: object, options: Record<string, unknown>, where: string): Record<string, unknown> {
  const value = structuredClone(options)
  const validate = new (ajv().Ajv)({ allErrors: true, useDefaults: true, strict: false }).compile(schema)
  if (validate(value)) return value
  const problems = describeErrors(validate.errors ?? [], value, new Map(), schema)
    .map((problem) => problem.startsWith(TOP) ? `options${problem.slice(TOP.length)}` : `options.${problem}`)
  throw new PluginLoadError(label, `its options do not fit its schema: ${problems.join('; ')} (config.yaml ${where})`)
}

// How describeErrors names the value itself rather than a key of it.
const TOP = '(top level)'

