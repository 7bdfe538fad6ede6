import { existsSync } from 'node:fs'
import { dirname } from 'node:path'
import type { RawConfig } from '../config/config-schema.js'
import { overlay } from '../config/request-options.js'
import { ConfigError } from '../config/config-error.js'
import { appendAt, envLayer, flagLayer, isPlainObject, mergeInto, readConfigFile, type ConfigFlags, type Layer } from '../config/config-layers.js'
import { describeErrors, sourceOf } from '../config/config-problems.js'
import { list, numberOrText, type ConfigPart, type ConfigSection, type EnvVariable, type SectionContext } from '../config/config-section.js'
import { BUILTIN_SECTIONS, configShape } from './config-sections.js'
import type { RuntimeKind } from '../config/runtime-kinds.js'
import { listenHost } from '../config/listen-host.js'
import { resolvePath, SHIPPED_CONFIG } from '../base/paths.js'
import { parseDuration, parseSize } from '../base/units.js'
import type { Config, CoreConfig, ModelConfig, OllamaAddress } from '../config/resolved-config.js'

export { ConfigError }
export type { ConfigFlags, Layer }
export type { Config, ConfigLimits, CoreConfig, CoreLimits, CoreModelConfig, ModelConfig, OllamaAddress } from '../config/resolved-config.js'

// The core's environment variables; each plugin's come with its config section.
const CORE_ENV: readonly EnvVariable[] = [
  { name: 'LLAMAGATE_HOST', key: ['host'] },
  { name: 'LLAMAGATE_PORT', key: ['port'], parse: numberOrText },
  { name: 'LLAMAGATE_OLLAMA_LISTEN', key: ['ollama_listen'] },
  { name: 'LLAMAGATE_HOME', key: ['data_dir'] },
  { name: 'LLAMAGATE_MODELS', key: ['models_dir'] },
  { name: 'LLAMAGATE_KEEP_ALIVE', key: ['keep_alive'] },
  { name: 'LLAMAGATE_LOG_LEVEL', key: ['log_level'] },
  { name: 'LLAMAGATE_STREAM_FORMAT', key: ['stream_format'] },
  { name: 'LLAMAGATE_RUNTIME', key: ['runtime'] },
  { name: 'LLAMAGATE_MAX_LOADED_MODELS', key: ['limits', 'max_loaded_models'], parse: numberOrText },
  { name: 'LLAMAGATE_MAX_QUEUE', key: ['limits', 'queue_length'], parse: numberOrText },
  { name: 'LLAMAGATE_NUM_CTX', key: ['default_options', 'num_ctx'], parse: numberOrText },
  { name: 'LLAMAGATE_ALIASES', key: ['__aliases'], parse: list },
  { name: 'LLAMA_CPP_SRC', key: ['llama_cpp_src'] },
]

function environment (sections: readonly ConfigSection[]): EnvVariable[] {
  return [...CORE_ENV, ...sections.flatMap((s) => s.env ?? [])]
}

/** Every environment variable the server reads for its configuration (for docs and deployment files to check). */
export const CONFIG_ENVIRONMENT: readonly string[] = [...environment(BUILTIN_SECTIONS).map((e) => e.name), 'LLAMAGATE_CONFIG']

/**
 * Loads the configuration. Precedence: built-in defaults < config file < environment < command flags.
 * The file is `flags.config`, else `$LLAMAGATE_CONFIG`, else the config.yaml shipped with the package.
 * A variable marked `append` (LLAMAGATE_ORIGINS) adds to the configured list rather than replacing it.
 * @throws ConfigError naming the key, the value, where it came from and what is allowed.
 */
export function loadConfig (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env, sections = BUILTIN_SECTIONS): Config {
  const { layers, configFile } = configLayers(flags, env, sections)
  return resolveConfig(layers, configFile, sections)
}

/** The layers `loadConfig` resolves, lowest first, and the config file read (null when none is). @throws ConfigError */
export function configLayers (flags: ConfigFlags, env: NodeJS.ProcessEnv, sections: readonly ConfigSection[]): { layers: Layer[], configFile: string | null } {
  const explicitFile = flags.config ?? env.LLAMAGATE_CONFIG
  const file = explicitFile !== undefined ? resolvePath(explicitFile, process.cwd()) : SHIPPED_CONFIG
  const layers: Layer[] = []
  let configFile: string | null = null
  if (existsSync(file)) {
    layers.push({ source: file, values: readConfigFile(file) })
    configFile = file
  } else if (explicitFile !== undefined) {
    throw new ConfigError([`config file ${file} does not exist`])
  }
  layers.push(envLayer(env, environment(sections)))
  layers.push(flagLayer(flags))
  return { layers, configFile }
}

/**
 * Builds a Config from layers of raw values, later layers winning: the core's keys, then each plugin's section
 * (the built-in plugins' unless `sections` says otherwise). Exported for tests and tools.
 */
export function resolveConfig (layers: Layer[], configFile: string | null = null, sections = BUILTIN_SECTIONS, runtimeKinds: readonly RuntimeKind[] = []): Config {
  const { schema, validate, defaults } = configShape(sections, runtimeKinds.map((k) => k.name))
  const variables = environment(sections)
  const envName = (path: string[]): string => variables.find((e) => e.key.join('.') === path.join('.'))?.name ?? 'environment'
  const merged = structuredClone(defaults)
  const sources = new Map<string, string>()
  for (const layer of layers) {
    // num_predict and max_tokens are one setting: a layer that gives either replaces the shipped max_tokens.
    const options = layer.values.default_options
    if (isPlainObject(options) && isPlainObject(merged.default_options)) merged.default_options = overlay(merged.default_options, options)
    mergeInto(merged, layer.values, [], layer.source, sources, envName)
  }
  for (const { key, items } of layers.flatMap((l) => l.appends ?? [])) appendAt(merged, key, items)
  const envAliases = layers.find((l) => l.source === 'environment')?.values.__aliases
  delete merged.__aliases
  if (!validate(merged)) throw new ConfigError(describeErrors(validate.errors ?? [], merged, sources, schema))
  const problems: string[] = []
  const context = sectionContext(configFile, sources, problems)
  const config = coreConfig(merged as RawConfig, configFile, context, Array.isArray(envAliases) ? envAliases as string[] : [], runtimeKinds)
  context.config = config
  for (const section of sections) {
    for (const [name, model] of config.models) Object.assign(model, modelPart(section, (merged as RawConfig).models[name]!, name, context))
    const { limits, ...part }: ConfigPart = section.resolve(merged as never, context)
    Object.assign(config, part)
    Object.assign(config.limits, limits)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/** A section's keys of one model, resolved: by its `resolveModel`, else those set, as written. */
function modelPart (section: ConfigSection, raw: Record<string, unknown>, name: string, context: SectionContext): Partial<ModelConfig> {
  if (section.models === undefined) return {}
  const own = Object.fromEntries(Object.keys(section.models).filter((key) => raw[key] !== undefined).map((key) => [key, raw[key]]))
  return section.resolveModel ? section.resolveModel(own as never, name, context) : own
}

/** The readers core and sections resolve with, each reporting a bad value by its key and its source. */
function sectionContext (configFile: string | null, sources: Map<string, string>, problems: string[]): SectionContext & { config: Config } {
  const from = (key: string): string => sourceOf(key.split('.'), sources) ?? 'defaults'
  const duration = (key: string, value: unknown): number => {
    const ms = parseDuration(value)
    if (ms === null) problems.push(`${key} = ${JSON.stringify(value)} is not allowed: must be a duration such as 30, "90s", "5m" or "1h" (from ${from(key)})`)
    return ms ?? 0
  }
  return {
    config: undefined as unknown as Config,
    base: configFile ? dirname(configFile) : process.cwd(),
    problem: (message) => { problems.push(message) },
    sourceOf: from,
    duration,
    positiveDuration (key, value) {
      const ms = duration(key, value)
      if (ms <= 0) problems.push(`${key} must be longer than 0 (from ${from(key)})`)
      return ms
    },
    size (key, value) {
      const bytes = parseSize(value)
      if (bytes === null || bytes < 1) problems.push(`${key} = ${JSON.stringify(value)} is not allowed: must be a size such as 1048576 or "16MiB"`)
      return bytes ?? 0
    },
    // `lowest` is 0 where the system may give out the port (as `port: 0`).
    listenAddress (key, text, lowest = 1) {
      const colon = text.lastIndexOf(':')
      const port = Number(text.slice(colon + 1))
      if (port < lowest || port > 65535) problems.push(`${key} = ${JSON.stringify(text)} is not allowed: the port must be ${lowest}-65535 (from ${from(key)})`)
      return { host: text.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port }
    },
  }
}

/**
 * The core's keys, resolved; the result is the Config the sections then fill in (until they have, it lacks their
 * fields, which only they know).
 */
function coreConfig (raw: RawConfig, configFile: string | null, context: SectionContext, envAliases: string[], runtimeKinds: readonly RuntimeKind[]): Config {
  const { base, duration, size } = context
  const dataDir = resolvePath(raw.data_dir, base)
  const { host, port } = listenHost(raw.host, raw.port, context)
  const core: CoreConfig = {
    host,
    port,
    ollamaListen: ollamaAddress(raw.ollama_listen, port, context),
    dataDir,
    modelsDir: raw.models_dir ? resolvePath(raw.models_dir, base) : resolvePath('models', dataDir),
    logLevel: raw.log_level,
    keepAliveMs: duration('keep_alive', raw.keep_alive),
    streamFormat: raw.stream_format,
    defaultOptions: raw.default_options,
    models: modelConfigs(raw.models),
    limits: {
      bodySize: size('limits.body_size', raw.limits.body_size),
      queueLength: raw.limits.queue_length,
      maxLoadedModels: raw.limits.max_loaded_models,
      loadTimeoutMs: duration('limits.load_timeout', raw.limits.load_timeout),
      streamStallMs: context.positiveDuration('limits.stream_stall_timeout', raw.limits.stream_stall_timeout),
      bodyTimeoutMs: context.positiveDuration('limits.body_timeout', raw.limits.body_timeout),
      headerTimeoutMs: context.positiveDuration('limits.header_timeout', raw.limits.header_timeout),
      connectionsPerClient: raw.limits.connections_per_client,
      unauthenticatedConnections: raw.limits.unauthenticated_connections,
      hookTimeoutMs: context.positiveDuration('limits.hook_timeout', raw.limits.hook_timeout),
    },
    runtime: raw.runtime,
    buildGpuRuntime: raw.build_gpu_runtime,
    runtimes: Object.fromEntries(Object.entries(raw.runtimes).map(([k, v]) => [k, { bin: resolvePath(v!.bin, base) }])),
    runtimeKinds,
    llamaCppSrc: raw.llama_cpp_src ? resolvePath(raw.llama_cpp_src, base) : null,
    // A plugin path that looks like a file is resolved against the config file; anything else is a package name.
    plugins: raw.plugins.map((p) => ({
      path: /^(\.{1,2}\/|\/|~\/)/.test(p.path) ? resolvePath(p.path, base) : p.path,
      options: p.options ?? {},
    })),
    shutdown: { drainTimeoutMs: duration('shutdown.drain_timeout', raw.shutdown.drain_timeout) },
    aliases: modelAliases(raw.models, envAliases, context.problem),
    configFile,
  }
  // Two listeners on one port: the second would fail to start with a less helpful message.
  const ollamaPort = core.ollamaListen?.port ?? 0
  if (ollamaPort !== 0 && ollamaPort === core.port) context.problem(`ollama_listen = ${JSON.stringify(raw.ollama_listen)} is not allowed: port uses port ${core.port} already (Ollama's own port is 11434) (from ${context.sourceOf('ollama_listen')})`)
  // The sections' fields are added next (resolveConfig): each is its plugin's to fill.
  return core as Config
}

/** Ollama's own address, where its clients look for it without being told (OpenClaw, the AI SDK's provider). */
export const OLLAMA_ADDRESS = { host: '127.0.0.1', port: 11434 } as const

/**
 * `ollama_listen`: `auto` is Ollama's own address, unless the main port is Ollama's already (it serves them there);
 * `off` and null are none; an address is the user's, required.
 */
function ollamaAddress (value: RawConfig['ollama_listen'], port: number, context: SectionContext): OllamaAddress | null {
  if (value === null || value === 'off') return null
  if (value === 'auto') return port === OLLAMA_ADDRESS.port ? null : { ...OLLAMA_ADDRESS, required: false }
  return { ...context.listenAddress('ollama_listen', value, 0), required: true }
}

/** `models.<name>`: the core's keys; each section adds its own (`modelPart`). */
function modelConfigs (raw: RawConfig['models']): Map<string, ModelConfig> {
  return new Map(Object.entries(raw).map(([name, m]) => [name, m.options ? { options: m.options } : {}] as const))
}

/**
 * The aliases of config.yaml's models and of `LLAMAGATE_ALIASES` (`alias=owner/name`, comma-separated; the
 * environment's win), by their lower case. One alias naming two models is a mistake.
 */
function modelAliases (models: RawConfig['models'], fromEnv: string[], problem: (message: string) => void): Map<string, string> {
  const aliases = new Map<string, string>()
  for (const [model, m] of Object.entries(models)) {
    for (const alias of m.aliases ?? []) {
      const key = alias.toLowerCase()
      const owner = aliases.get(key)
      if (owner !== undefined && owner !== model) problem(`models.${model}.aliases: "${alias}" is already an alias of ${owner}`)
      aliases.set(key, model)
    }
  }
  for (const pair of fromEnv) {
    const eq = pair.indexOf('=')
    const alias = pair.slice(0, eq).trim()
    const model = pair.slice(eq + 1).trim()
    if (eq < 1 || model === '' || /\s/.test(alias)) { problem(`LLAMAGATE_ALIASES: "${pair}" is not alias=owner/name`); continue }
    aliases.set(alias.toLowerCase(), model)
  }
  return aliases
}

