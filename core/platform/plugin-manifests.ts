import type { Command } from './command.js'
import { ConfigError } from '../config/config-error.js'
import { isPlainObject, type ConfigFlags, type Layer } from '../config/config-layers.js'
import { ConfigSchema, MODEL_KEYS } from '../config/config-schema.js'
import type { ConfigSection, SectionContext } from '../config/config-section.js'
import { BUILTIN_SECTIONS, configShape } from './config-sections.js'
import { configLayers, resolveConfig } from './config.js'
import { builtinManifests, importAdminPlugin, PluginLoadError } from './plugin-loader.js'
import type { PluginManifest } from './plugin-manifest.js'
import { checkedRuntimeKinds } from '../config/runtime-kind-check.js'
import type { RuntimeKind } from '../config/runtime-kinds.js'
import type { Config } from '../config/resolved-config.js'

/**
 * The manifests of config.yaml's admin plugins (definePlugin's `manifest`), in the order listed: their CLI commands,
 * doctor checks, config section and checks, each named by its plugin and wrapped so that what it throws names it.
 * @throws PluginLoadError when a plugin cannot be imported or its manifest is malformed
 */
export async function adminManifests (config: Pick<Config, 'plugins' | 'configFile' | 'dataDir'>): Promise<PluginManifest[]> {
  const manifests: PluginManifest[] = []
  for (const { path } of config.plugins) {
    const { spec, label } = await importAdminPlugin(path, config)
    if (spec?.manifest === undefined) continue
    manifests.push(named(label, spec.name, spec.manifest))
  }
  return manifests
}

/** The built-in plugins' manifests, then the admin plugins'. */
export async function allManifests (config: Pick<Config, 'plugins' | 'configFile' | 'dataDir'>): Promise<PluginManifest[]> {
  return [...await builtinManifests(), ...await adminManifests(config)]
}

/**
 * The configuration as `serve` reads it, admin plugins' sections included, and every plugin's manifest. The plugins
 * listed are found from the core's and the built-ins' keys first (their own keys cannot be judged before their
 * sections are loaded), then the whole configuration is checked with their sections.
 * @throws ConfigError naming each bad key (a plugin's key, with the plugin) · PluginLoadError naming the plugin
 */
export async function loadConfigAndPlugins (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Promise<{ config: Config, manifests: PluginManifest[] }> {
  return resolveConfigAndPlugins((sections) => configLayers(flags, env, sections))
}

/**
 * loadConfigAndPlugins of layers of one's own (llamagate/testing's): `layersFor` gives them for a list of sections (the
 * environment's layer reads their variables).
 */
export async function resolveConfigAndPlugins (layersFor: (sections: readonly ConfigSection[]) => { layers: Layer[], configFile: string | null }): Promise<{ config: Config, manifests: PluginManifest[] }> {
  const first = layersFor(BUILTIN_SECTIONS)
  const listed = first.layers.some((l) => Array.isArray(l.values.plugins) && l.values.plugins.length > 0)
  if (!listed) return { config: resolveConfig(first.layers, first.configFile), manifests: await builtinManifests() }
  const admin = await adminManifests(resolveConfig(first.layers.map(builtinKeysOnly), first.configFile))
  const kinds = runtimeKindsOf(admin)
  const own = (await Promise.all(admin.map(async (m) => m.config ? [await m.config()] : []))).flat()
  // The built-ins' list itself when no plugin adds a section: its schema is compiled once per list.
  const sections = own.length === 0 ? BUILTIN_SECTIONS : [...BUILTIN_SECTIONS, ...own]
  try {
    configShape(sections)
  } catch (err) {
    // Two sections claiming one key: the message names the plugin that came second.
    throw new ConfigError([(err as Error).message])
  }
  const { layers, configFile } = layersFor(sections)
  try {
    return { config: resolveConfig(layers, configFile, sections, kinds), manifests: [...await builtinManifests(), ...admin] }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    throw new ConfigError(err.problems.map((problem) => nameOwner(problem, own)))
  }
}

/** The manifest under the plugin's name, checked for shape, its functions naming the plugin when they throw. */
function named (label: string, name: string, manifest: unknown): PluginManifest {
  const bad = (why: string): PluginLoadError => new PluginLoadError(label, `its manifest ${why} (see docs/plugins.md)`)
  if (!isPlainObject(manifest)) throw bad('is not an object')
  for (const key of ['config', 'doctor', 'checkConfig', 'startCheck'] as const) {
    if (manifest[key] !== undefined && typeof manifest[key] !== 'function') throw bad(`has a ${key} that is not a function`)
  }
  const runtimes = checkedRuntimeKinds(name, manifest.runtimes)
  if (typeof runtimes === 'string') throw bad(runtimes)
  const commands = manifest.commands ?? []
  if (!Array.isArray(commands)) throw bad('has commands that are not a list')
  for (const command of commands) {
    if (!isPlainObject(command) || typeof command.name !== 'string' || typeof command.run !== 'function') throw bad('has a command without a name or a run function')
  }
  const m = manifest as Omit<PluginManifest, 'name'>
  const threw = (what: string, err: unknown): PluginLoadError =>
    new PluginLoadError(label, `its manifest's ${what} threw: ${(err as Error)?.message ?? String(err)}`, { cause: err })
  return {
    name,
    commands: commands.map((c: NonNullable<PluginManifest['commands']>[number]) => ({
      ...c,
      summary: `${c.summary ?? ''} (plugin ${name})`,
      usage: c.usage ?? [`llamagate ${c.name}`],
      // `--config` finds the config.yaml that lists the plugin; every command of a plugin takes it.
      options: { config: { type: 'string' }, ...c.options },
      positionals: c.positionals ?? { min: 0, max: 0 },
    })),
    config: m.config && (async () => {
      let section: ConfigSection
      try {
        section = await m.config!()
      } catch (err) { throw threw('config', err) }
      if (!isPlainObject(section) || !isPlainObject(section.keys) || typeof section.resolve !== 'function') throw bad('config gives no section (keys and resolve)')
      return { ...section, plugin: name, resolve: (raw: never, context: SectionContext) => { try { return section.resolve(raw, context) } catch (err) { throw threw('config section', err) } } }
    }),
    doctor: m.doctor && (async (context) => {
      try {
        const report = await m.doctor!(context)
        return { ...report, checks: report.checks.map((c) => ({ ...c, name: `${c.name} (plugin ${name})` })) }
      } catch (err) {
        return { checks: [{ name: `plugin ${name}`, status: 'fail', message: `its doctor check threw: ${(err as Error)?.message ?? String(err)}`, fix: `see the ${name} plugin's documentation` }] }
      }
    }),
    checkConfig: m.checkConfig && (async (config, context) => {
      try { return await m.checkConfig!(config, context) } catch (err) { throw threw('checkConfig', err) }
    }),
    startCheck: m.startCheck && (async (config) => {
      try { return await m.startCheck!(config) } catch (err) { throw threw('startCheck', err) }
    }),
    runtimes,
  }
}

/** The runtime kinds the plugins add, in their order. @throws PluginLoadError naming a plugin whose kind another one has */
function runtimeKindsOf (manifests: readonly PluginManifest[]): RuntimeKind[] {
  const kinds: RuntimeKind[] = []
  const owners = new Map<string, string>()
  for (const manifest of manifests) {
    for (const kind of manifest.runtimes ?? []) {
      const owner = owners.get(kind.name)
      if (owner !== undefined) throw new PluginLoadError(`"${manifest.name}"`, `its runtime kind "${kind.name}" is the ${owner} plugin's already`)
      owners.set(kind.name, manifest.name)
      kinds.push(kind)
    }
  }
  return kinds
}

/** A problem about a key an admin plugin's section owns, with the plugin named in front. */
function nameOwner (problem: string, sections: readonly ConfigSection[]): string {
  const key = problem.split(/[ =]/, 1)[0]!.split('.')
  const owner = sections.find((s) => Object.hasOwn(s.keys, key[0]!) ||
    (key[0] === 'limits' && Object.hasOwn(s.limits ?? {}, key[1] ?? '')) ||
    (key[0] === 'models' && Object.hasOwn(s.models ?? {}, key[2] ?? '')))
  return owner !== undefined ? `plugin "${owner.plugin}": ${problem}` : problem
}

/**
 * The configuration of the core's and the built-ins' keys alone, the plugins' keys and runtime kinds left out: where a
 * client command finds the server (host, port) without loading the plugins config.yaml lists. @throws ConfigError
 */
export function loadBuiltinKeys (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const { layers, configFile } = configLayers(flags, env, BUILTIN_SECTIONS)
  return resolveConfig(layers.map(builtinKeysOnly), configFile)
}

/** A layer with only the keys the core and the built-in plugins know: enough to find the plugins listed. */
function builtinKeysOnly (layer: Layer): Layer {
  const known = (keys: Iterable<string>, value: unknown): Record<string, unknown> =>
    Object.fromEntries([...keys].filter((k) => isPlainObject(value) && Object.hasOwn(value, k)).map((k) => [k, (value as Record<string, unknown>)[k]]))
  // `runtime` and `runtimes` may name the plugins' own runtime kinds, and finding the plugins needs neither.
  const values = known(Object.keys(configShape().schema.properties).filter((k) => k !== 'runtime' && k !== 'runtimes'), layer.values)
  if (isPlainObject(values.limits)) values.limits = known([...Object.keys(ConfigSchema.properties.limits.properties), ...BUILTIN_SECTIONS.flatMap((s) => Object.keys(s.limits ?? {}))], values.limits)
  if (isPlainObject(values.models)) {
    const modelKeys = [...Object.keys(MODEL_KEYS), ...BUILTIN_SECTIONS.flatMap((s) => Object.keys(s.models ?? {}))]
    values.models = Object.fromEntries(Object.entries(values.models).map(([name, model]) => [name, isPlainObject(model) ? known(modelKeys, model) : model]))
  }
  return { ...layer, values }
}

/**
 * The CLI commands of the admin plugins config.yaml lists (found from the core's and built-ins' keys alone: a bad key
 * of a plugin's section does not hide its commands). @throws PluginLoadError naming a plugin that cannot be loaded,
 * or whose command takes a name another command has
 */
export async function adminCommands (flags: ConfigFlags, env: NodeJS.ProcessEnv, taken: ReadonlySet<string>): Promise<Command[]> {
  const { layers, configFile } = configLayers(flags, env, BUILTIN_SECTIONS)
  if (!layers.some((l) => Array.isArray(l.values.plugins) && l.values.plugins.length > 0)) return []
  const commands: Command[] = []
  for (const manifest of await adminManifests(resolveConfig(layers.map(builtinKeysOnly), configFile))) {
    for (const command of manifest.commands ?? []) {
      const names = [command.name, ...command.aliases ?? []]
      const clash = names.find((n) => taken.has(n) || commands.some((c) => c.name === n || c.aliases?.includes(n)))
      if (clash !== undefined) throw new PluginLoadError(`"${manifest.name}"`, `its command "${clash}" has the name of another command`)
      commands.push(command)
    }
  }
  return commands
}
