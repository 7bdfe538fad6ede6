import { existsSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { Ajv, type ErrorObject } from 'ajv'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import { ConfigSchema, type Backend, type RawConfig } from './config-schema.js'
import type { Options } from './options-schema.js'
import { overlay } from './request-options.js'
import { ConfigError } from './config-error.js'
import { resolvePath, SHIPPED_CONFIG } from './paths.js'
import { parseDuration, parseSize } from './units.js'
import { addressKind, parseHostPort, type HostPort } from './host-port.js'

/** The resolved configuration the app runs with: durations in ms, sizes in bytes, paths absolute. */
export interface Config {
  host: string
  port: number
  /** A second address serving the same app, where native streams default to NDJSON (Ollama's clients); null: none. */
  ollamaListen: HostPort | null
  dataDir: string
  modelsDir: string
  logLevel: RawConfig['log_level']
  keepAliveMs: number
  streamFormat: 'sse' | 'ndjson'
  defaultOptions: Options
  /**
   * Per model: option overrides, llama-server arguments (model files resolved), preloading and its keep-alive. A Map,
   * as every table keyed by a model name: a name such as `constructor` must find nothing, not Object's own.
   */
  models: ReadonlyMap<string, ModelConfig>
  limits: {
    bodySize: number, queueLength: number, maxLoadedModels: number, loadTimeoutMs: number, streamStallMs: number,
    /** The largest output schema or grammar a request may carry, in bytes; and the most enum values and consts in one. */
    schemaBytes: number, schemaAlternatives: number,
    /** How long an uploaded blob no model is made from is kept. */
    unusedBlobMs: number,
    /** The most bytes uploaded blobs no model is made from may hold together, uploads under way included; null: no quota. */
    blobQuota: number | null,
    /** How long a request's body may take to arrive whole after its head. */
    bodyTimeoutMs: number,
    /** How long a busy runtime may answer nothing, or move no slot on, before it is stopped. */
    progressTimeoutMs: number,
    /** How long a request's head may take to arrive whole. */
    headerTimeoutMs: number,
    /** Open connections per client address; and, with API keys on, connections no valid key was shown on yet. */
    connectionsPerClient: number, unauthenticatedConnections: number,
    /** How long requests for a loaded model go before a swap away from it; how long a model just loaded stays at least. */
    swapWaitMs: number, minResidencyMs: number,
    /** What is read of an upstream's answers (`limits.upstream_*`); each upstream's config carries them too. */
    upstream: UpstreamLimits,
  }
  runtime: 'auto' | Backend
  /** Build the runtime for a GPU found without one, in the background at start (its toolkit must be there). */
  buildGpuRuntime: boolean
  runtimes: Partial<Record<Backend, { bin: string }>>
  llamaCppSrc: string | null
  /** `autoSetup`: install what the converter lacks at start, in the background, where no question needs asking. */
  conversion: { python: string | null, timeoutMs: number, autoSetup: boolean }
  /** Prompt caches saved when a runtime stops and restored when its model loads again: their folder's budget, and the smallest worth saving. */
  promptCache: { enabled: boolean, sizeBytes: number, minTokens: number }
  /** `allowPrivateRedirects`: the hub may redirect to loopback or private addresses of hosts other than its own. */
  hub: { endpoint: string, token: string | null, allowPrivateRedirects: boolean }
  /** `requireKeysOffLoopback`: refuse to start on a non-loopback address without API keys. */
  auth: { apiKeys: string[], keysFile: string, requireKeysOffLoopback: boolean }
  cors: { origins: string[] }
  allowedHosts: string[]
  /** Whether `image_url` parts may name http(s) URLs, which the gateway then fetches. */
  vision: { allowRemoteImages: boolean, allowPrivateImageHosts: boolean, maxRemoteImages: number, maxRemoteImageBytes: number }
  /** `listen`: where /metrics is served on its own, without a key, instead of on the main address; null: the main address. */
  metrics: { enabled: boolean, listen: { host: string, port: number } | null }
  plugins: Array<{ path: string, options: Record<string, unknown> }>
  /** How long SIGTERM waits for answers and pulls in flight before cutting them. */
  shutdown: { drainTimeoutMs: number }
  /** llama.cpp RPC workers models can be split across (`models.<name>.rpc`). */
  rpc: { workers: Array<{ name: string, endpoint: HostPort, allowPublic: boolean }> }
  /** Other servers whose models are served here as if local (`upstreams`). */
  upstreams: UpstreamConfig[]
  /** Where a request for a model several upstreams list goes (`upstream_routing`): by its conversation's prefix, or in turns. */
  upstreamRouting: 'prefix' | 'round_robin'
  /** Other names for models (`models.<name>.aliases`, `LLAMAGATE_ALIASES`), by their lower case, each with its model. */
  aliases: ReadonlyMap<string, string>
  /** The config file that was read, or null when none was. */
  configFile: string | null
}

export interface ModelConfig {
  options?: Options
  /** Appended to the model's llama-server command line; once checked by the runtimes plugin, model file items are model names or absolute paths. */
  args?: string[]
  /** Loaded at start and kept (keepAliveMs, else forever). */
  preload?: boolean
  /** The preloaded model's keep-alive; unset: forever. */
  keepAliveMs?: number
  /** Names of `rpc.workers` the model's layers are split across. */
  rpc?: string[]
  /** llama-server's `--tensor-split`: each device's share of the layers. */
  tensorSplit?: number[]
  /** When models do not fit together: a higher one is swapped in first and out last. @default 0 */
  priority?: number
  /** Never unloaded to make room for another model; reloaded once room is back. */
  pinned?: boolean
}

/**
 * How much of an upstream's answers the gateway reads (config.yaml's `limits.upstream_*`): an upstream is another
 * party, and nothing it sends may cost this server more than these.
 */
export interface UpstreamLimits {
  /** Bytes of one answer, whole or streamed. */
  answerBytes: number
  /** Bytes of one error answer. */
  errorBytes: number
  /** The longest line, event or chunk of a stream that is held whole. */
  lineBytes: number
  /** Models in one model list. */
  models: number
}

/** One of config.yaml's `upstreams`: another server whose models are served here, reached with its own key. */
export interface UpstreamConfig {
  name: string
  /** `http(s)://host[:port][/path]`, without a trailing slash. */
  url: string
  /** What it speaks: another llamagate and Ollama list models at /api/tags; an OpenAI-compatible engine at /v1/models. */
  kind: 'llamagate' | 'openai' | 'ollama'
  /** Its own API key, sent as `Authorization: Bearer`; never shown to clients. null: none. */
  key: string | null
  /** Only these of its models; empty: every model it lists. */
  models: string[]
  /** Put before its model names here: a model `m` is served as `prefix + m`. @default '' */
  prefix: string
  /** The most requests sent to it at once. @default 16 */
  maxConcurrent: number
  /**
   * How Anthropic Messages requests (`/v1/messages`, its count_tokens) reach it: `native` as they are; `convert`
   * to chat completions and back, for an engine with no Messages API (SGLang, some vLLM builds, older Ollama);
   * `auto` as they are until it answers 404 or 405, then converted. Unset where the config left it so.
   * @default 'auto'
   */
  messages?: 'auto' | 'native' | 'convert'
  /** What is read of its answers: `limits.upstream_*`, the same for every upstream. */
  limits: UpstreamLimits
}

export { ConfigError }

/** Values given on the command line; they win over everything else. */
export interface ConfigFlags { host?: string, port?: string, config?: string, models?: string }


type Layer = { source: string, values: Record<string, unknown> }

// Environment variables and the config key each sets. Values arrive as text; `parse` turns them into
// what the schema expects, and the schema check then names the variable if the value is wrong.
const ENV_KEYS: Array<{ name: string, key: string[], parse?: (v: string) => unknown }> = [
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
  { name: 'LLAMAGATE_API_KEYS', key: ['auth', 'api_keys'], parse: list },
  { name: 'LLAMAGATE_ALLOWED_HOSTS', key: ['allowed_hosts'], parse: list },
  { name: 'LLAMA_CPP_SRC', key: ['llama_cpp_src'] },
  { name: 'HF_ENDPOINT', key: ['hub', 'endpoint'] },
  { name: 'HF_TOKEN', key: ['hub', 'token'] },
]

/** Every environment variable the server reads for its configuration (for docs and deployment files to check). */
export const CONFIG_ENVIRONMENT: readonly string[] = [...ENV_KEYS.map((e) => e.name), 'LLAMAGATE_CONFIG', 'LLAMAGATE_ORIGINS']

/**
 * Loads the configuration. Precedence: built-in defaults < config file < environment < command flags.
 * The file is `flags.config`, else `$LLAMAGATE_CONFIG`, else the config.yaml shipped with the package.
 * `LLAMAGATE_ORIGINS` adds CORS origins to the configured list rather than replacing it.
 * @throws ConfigError naming the key, the value, where it came from and what is allowed.
 */
export function loadConfig (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
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
  layers.push(envLayer(env))
  layers.push(flagLayer(flags))
  return resolveConfig(layers, configFile)
}

/** Builds a Config from layers of raw values, later layers winning. Exported for tests and tools. */
export function resolveConfig (layers: Layer[], configFile: string | null = null): Config {
  const merged = structuredClone(DEFAULTS) as Record<string, unknown>
  const sources = new Map<string, string>()
  for (const layer of layers) {
    // num_predict and max_tokens are one setting: a layer that gives either replaces the shipped max_tokens.
    const options = layer.values.default_options
    if (isPlainObject(options) && isPlainObject(merged.default_options)) merged.default_options = overlay(merged.default_options, options)
    mergeInto(merged, layer.values, [], layer.source, sources)
  }
  const extraOrigins = layers.find((l) => l.source === 'environment')?.values.__extra_origins
  delete merged.__extra_origins
  const envAliases = layers.find((l) => l.source === 'environment')?.values.__aliases
  delete merged.__aliases
  if (!validate(merged)) throw new ConfigError(describeErrors(validate.errors ?? [], merged, sources))
  const raw = merged as RawConfig
  if (Array.isArray(extraOrigins)) raw.cors.origins.push(...(extraOrigins as string[]))
  return toConfig(raw, configFile, sources, Array.isArray(envAliases) ? envAliases as string[] : [])
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false })
const validate = ajv.compile<RawConfig>(ConfigSchema)
// The defaults come from the schema itself, so config.yaml, the schema and the code cannot disagree.
const DEFAULTS: RawConfig = (() => {
  const value = {}
  validate(value)
  return value as RawConfig
})()

function readConfigFile (file: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError([`cannot read config file ${file}: ${(err as Error).message}`])
  }
  let parsed: unknown
  try {
    parsed = parseYaml(text)
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : ''
    throw new ConfigError([`${file}${where} is not valid YAML: ${(err as Error).message.split('\n')[0]}`])
  }
  if (parsed === null || parsed === undefined) return {}
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([`${file} must hold a mapping of keys to values, not ${Array.isArray(parsed) ? 'a list' : typeof parsed}`])
  }
  return parsed as Record<string, unknown>
}

function envLayer (env: NodeJS.ProcessEnv): Layer {
  const values: Record<string, unknown> = {}
  for (const { name, key, parse } of ENV_KEYS) {
    const text = env[name]
    if (text === undefined || text === '') continue
    setPath(values, key, parse ? parse(text) : text)
  }
  if (env.LLAMAGATE_ORIGINS) values.__extra_origins = list(env.LLAMAGATE_ORIGINS)
  return { source: 'environment', values }
}

function flagLayer (flags: ConfigFlags): Layer {
  const values: Record<string, unknown> = {}
  if (flags.host !== undefined) values.host = flags.host
  if (flags.port !== undefined) values.port = numberOrText(flags.port)
  if (flags.models !== undefined) values.models_dir = flags.models
  return { source: 'command line', values }
}

function mergeInto (target: Record<string, unknown>, source: Record<string, unknown>, path: string[],
  label: string, sources: Map<string, string>): void {
  for (const [key, value] of Object.entries(source)) {
    const here = [...path, key]
    // Own keys only, written as data: a model named `__proto__` in config.yaml must not reach Object.prototype.
    const current = Object.hasOwn(target, key) ? target[key] : undefined
    if (isPlainObject(value) && isPlainObject(current) && key !== '__extra_origins') {
      mergeInto(current, value, here, label, sources)
    } else {
      Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
      sources.set(here.join('.'), label === 'environment' ? envName(here) : label)
    }
  }
}

function envName (path: string[]): string {
  return ENV_KEYS.find((e) => e.key.join('.') === path.join('.'))?.name ?? 'environment'
}

function describeErrors (errors: ErrorObject[], value: unknown, sources: Map<string, string>): string[] {
  const seen = new Set<string>()
  const problems: string[] = []
  for (const error of errors) {
    // A union reports one error per branch; the branch errors say little, the union says what is allowed.
    if (error.keyword === 'anyOf' || error.keyword === 'const') {
      const parent = errors.find((e) => e.keyword === 'anyOf' && e.instancePath === error.instancePath)
      if (parent && error !== parent) continue
    }
    const path = error.instancePath.split('/').slice(1).map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'))
    let key = path.join('.')
    let problem: string
    if (error.keyword === 'additionalProperties') {
      const extra = String(error.params.additionalProperty)
      key = [...path, extra].join('.')
      const allowed = Object.keys(schemaAt(path)?.properties ?? {})
      problem = `${key} is not a known key; allowed keys here: ${allowed.join(', ')}`
    } else {
      const shown = JSON.stringify(valueAt(value, path))
      problem = `${key || '(top level)'} = ${shown} is not allowed: ${explain(error, path)}`
    }
    if (seen.has(problem)) continue
    seen.add(problem)
    const source = sourceOf(path, sources)
    problems.push(source ? `${problem} (from ${source})` : problem)
  }
  return problems
}

function explain (error: ErrorObject, path: string[]): string {
  const schema = schemaAt(path)
  if (error.keyword === 'anyOf' && schema) {
    const literals = literalsOf(schema)
    if (literals.length > 0) return `must be one of ${literals.map((l: unknown) => JSON.stringify(l)).join(', ')}`
    if (schema.description) return `must be ${schema.description}`
  }
  return `${error.message ?? 'invalid value'}`
}

// The allowed values of a union of literals, through nested unions.
function literalsOf (schema: any): unknown[] {
  if (schema.const !== undefined) return [schema.const]
  return (schema.anyOf ?? []).flatMap(literalsOf)
}

function schemaAt (path: string[]): any {
  let schema: any = ConfigSchema
  for (const part of path) {
    if (!schema) return undefined
    if (schema.properties?.[part]) schema = schema.properties[part]
    else if (schema.items && /^\d+$/.test(part)) schema = schema.items
    else if (schema.patternProperties) schema = Object.values(schema.patternProperties)[0]
    else if (typeof schema.additionalProperties === 'object') schema = schema.additionalProperties
    else return undefined
  }
  return schema
}

function sourceOf (path: string[], sources: Map<string, string>): string | undefined {
  for (let n = path.length; n > 0; n--) {
    const source = sources.get(path.slice(0, n).join('.'))
    if (source) return source
  }
  return undefined
}

function toConfig (raw: RawConfig, configFile: string | null, sources: Map<string, string>, envAliases: string[]): Config {
  const base = configFile ? dirname(configFile) : process.cwd()
  const problems: string[] = []
  const duration = (key: string, value: unknown): number => {
    const ms = parseDuration(value)
    if (ms === null) problems.push(`${key} = ${JSON.stringify(value)} is not allowed: must be a duration such as 30, "90s", "5m" or "1h" (from ${sourceOf(key.split('.'), sources) ?? 'defaults'})`)
    return ms ?? 0
  }
  const positive = (key: string, ms: number): number => {
    if (ms <= 0) problems.push(`${key} must be longer than 0 (from ${sourceOf(key.split('.'), sources) ?? 'defaults'})`)
    return ms
  }
  // `lowest` is 0 where the system may give out the port (as `port: 0`).
  const listenAddress = (key: string, text: string, lowest = 1): HostPort => {
    const colon = text.lastIndexOf(':')
    const port = Number(text.slice(colon + 1))
    if (port < lowest || port > 65535) problems.push(`${key} = ${JSON.stringify(text)} is not allowed: the port must be ${lowest}-65535 (from ${sourceOf(key.split('.'), sources) ?? 'defaults'})`)
    return { host: text.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port }
  }
  const size = (key: string, value: unknown): number => {
    const bytes = parseSize(value)
    if (bytes === null || bytes < 1) problems.push(`${key} = ${JSON.stringify(value)} is not allowed: must be a size such as 1048576 or "16MiB"`)
    return bytes ?? 0
  }
  const bodySize = size('limits.body_size', raw.limits.body_size)
  const upstreamLimits: UpstreamLimits = {
    answerBytes: size('limits.upstream_answer_size', raw.limits.upstream_answer_size),
    errorBytes: size('limits.upstream_error_size', raw.limits.upstream_error_size),
    lineBytes: size('limits.upstream_line_size', raw.limits.upstream_line_size),
    models: raw.limits.upstream_models,
  }
  const dataDir = resolvePath(raw.data_dir, base)
  const config: Config = {
    host: raw.host,
    port: raw.port,
    ollamaListen: raw.ollama_listen === null ? null : listenAddress('ollama_listen', raw.ollama_listen, 0),
    dataDir,
    modelsDir: raw.models_dir ? resolvePath(raw.models_dir, base) : resolvePath('models', dataDir),
    logLevel: raw.log_level,
    keepAliveMs: duration('keep_alive', raw.keep_alive),
    streamFormat: raw.stream_format,
    defaultOptions: raw.default_options,
    models: modelConfigs(raw.models, duration),
    limits: {
      bodySize,
      queueLength: raw.limits.queue_length,
      maxLoadedModels: raw.limits.max_loaded_models,
      loadTimeoutMs: duration('limits.load_timeout', raw.limits.load_timeout),
      streamStallMs: positive('limits.stream_stall_timeout', duration('limits.stream_stall_timeout', raw.limits.stream_stall_timeout)),
      schemaBytes: size('limits.schema_size', raw.limits.schema_size),
      schemaAlternatives: raw.limits.schema_alternatives,
      unusedBlobMs: duration('limits.unused_blob_ttl', raw.limits.unused_blob_ttl),
      blobQuota: raw.limits.blob_quota === null || parseSize(raw.limits.blob_quota) === 0 ? null : size('limits.blob_quota', raw.limits.blob_quota),
      bodyTimeoutMs: positive('limits.body_timeout', duration('limits.body_timeout', raw.limits.body_timeout)),
      progressTimeoutMs: positive('limits.progress_timeout', duration('limits.progress_timeout', raw.limits.progress_timeout)),
      headerTimeoutMs: positive('limits.header_timeout', duration('limits.header_timeout', raw.limits.header_timeout)),
      connectionsPerClient: raw.limits.connections_per_client,
      unauthenticatedConnections: raw.limits.unauthenticated_connections,
      swapWaitMs: duration('limits.swap_wait', raw.limits.swap_wait),
      minResidencyMs: duration('limits.min_residency', raw.limits.min_residency),
      upstream: upstreamLimits,
    },
    runtime: raw.runtime,
    buildGpuRuntime: raw.build_gpu_runtime,
    runtimes: Object.fromEntries(Object.entries(raw.runtimes).map(([k, v]) => [k, { bin: resolvePath(v!.bin, base) }])),
    llamaCppSrc: raw.llama_cpp_src ? resolvePath(raw.llama_cpp_src, base) : null,
    conversion: { python: raw.conversion.python, timeoutMs: duration('conversion.timeout', raw.conversion.timeout), autoSetup: raw.conversion.auto_setup },
    promptCache: { enabled: raw.prompt_cache.enabled, sizeBytes: size('prompt_cache.size', raw.prompt_cache.size), minTokens: raw.prompt_cache.min_tokens },
    hub: { endpoint: raw.hub.endpoint.replace(/\/+$/, ''), token: raw.hub.token, allowPrivateRedirects: raw.hub.allow_private_redirects },
    auth: { apiKeys: raw.auth.api_keys, keysFile: resolvePath(raw.auth.keys_file, dataDir), requireKeysOffLoopback: raw.auth.require_keys_off_loopback },
    cors: { origins: raw.cors.origins },
    allowedHosts: raw.allowed_hosts,
    vision: {
      allowRemoteImages: raw.vision.allow_remote_images,
      allowPrivateImageHosts: raw.vision.allow_private_image_hosts,
      maxRemoteImages: raw.vision.max_remote_images,
      maxRemoteImageBytes: size('vision.max_remote_image_bytes', raw.vision.max_remote_image_bytes),
    },
    metrics: { enabled: raw.metrics.enabled, listen: raw.metrics.listen === null ? null : listenAddress('metrics.listen', raw.metrics.listen) },
    // A plugin path that looks like a file is resolved against the config file; anything else is a package name.
    plugins: raw.plugins.map((p) => ({
      path: /^(\.{1,2}\/|\/|~\/)/.test(p.path) ? resolvePath(p.path, base) : p.path,
      options: p.options ?? {},
    })),
    shutdown: { drainTimeoutMs: duration('shutdown.drain_timeout', raw.shutdown.drain_timeout) },
    rpc: { workers: rpcWorkers(raw.rpc.workers, problems) },
    upstreams: upstreamConfigs(raw.upstreams, upstreamLimits, problems),
    upstreamRouting: raw.upstream_routing,
    aliases: modelAliases(raw.models, envAliases, problems),
    configFile,
  }
  // Two listeners on one port: the second would fail to start with a less helpful message.
  const ollamaPort = config.ollamaListen?.port ?? 0
  for (const [other, port] of [['port', config.port], ['metrics.listen', config.metrics.listen?.port ?? 0]] as const) {
    if (ollamaPort !== 0 && ollamaPort === port) problems.push(`ollama_listen = ${JSON.stringify(raw.ollama_listen)} is not allowed: ${other} uses port ${port} already (Ollama's own port is 11434) (from ${sourceOf(['ollama_listen'], sources) ?? 'defaults'})`)
  }
  const workerNames = new Set(config.rpc.workers.map((w) => w.name))
  for (const [name, model] of config.models) {
    const unknown = (model.rpc ?? []).filter((w) => !workerNames.has(w))
    if (unknown.length > 0) problems.push(`models.${name}.rpc names ${unknown.map((w) => JSON.stringify(w)).join(', ')}, not among rpc.workers (${[...workerNames].join(', ') || 'none'})`)
    if (model.tensorSplit && !model.tensorSplit.some((share) => share > 0)) problems.push(`models.${name}.tensor_split gives every device 0: at least one share must be more than 0`)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/** `models.<name>`; its llama-server `args` are checked by the runtimes plugin (its config check), which knows the flags. */
function modelConfigs (raw: RawConfig['models'], duration: (key: string, value: unknown) => number): Map<string, ModelConfig> {
  return new Map(Object.entries(raw).map(([name, m]) => {
    const config: ModelConfig = {
      ...(m.options ? { options: m.options } : {}),
      ...(m.args?.length ? { args: m.args } : {}),
      ...(m.preload ? { preload: true } : {}),
      ...(m.keep_alive !== undefined ? { keepAliveMs: duration(`models.${name}.keep_alive`, m.keep_alive) } : {}),
      ...(m.rpc ? { rpc: m.rpc } : {}),
      ...(m.tensor_split ? { tensorSplit: m.tensor_split } : {}),
      ...(m.priority !== undefined ? { priority: m.priority } : {}),
      ...(m.pinned ? { pinned: true } : {}),
    }
    return [name, config] as const
  }))
}

/**
 * The aliases of config.yaml's models and of `LLAMAGATE_ALIASES` (`alias=owner/name`, comma-separated; the
 * environment's win), by their lower case. One alias naming two models is a mistake.
 */
function modelAliases (models: RawConfig['models'], fromEnv: string[], problems: string[]): Map<string, string> {
  const aliases = new Map<string, string>()
  for (const [model, m] of Object.entries(models)) {
    for (const alias of m.aliases ?? []) {
      const key = alias.toLowerCase()
      const owner = aliases.get(key)
      if (owner !== undefined && owner !== model) problems.push(`models.${model}.aliases: "${alias}" is already an alias of ${owner}`)
      aliases.set(key, model)
    }
  }
  for (const pair of fromEnv) {
    const eq = pair.indexOf('=')
    const alias = pair.slice(0, eq).trim()
    const model = pair.slice(eq + 1).trim()
    if (eq < 1 || model === '' || /\s/.test(alias)) { problems.push(`LLAMAGATE_ALIASES: "${pair}" is not alias=owner/name`); continue }
    aliases.set(alias.toLowerCase(), model)
  }
  return aliases
}

/**
 * `rpc.workers`: names unique, endpoints host:port, and no public address unless allowed: the RPC protocol has no
 * authentication, and anyone who reaches a worker can run code on it (llama.cpp: "never expose it to an open network").
 */
function rpcWorkers (raw: RawConfig['rpc']['workers'], problems: string[]): Config['rpc']['workers'] {
  const seen = new Set<string>()
  return raw.flatMap((w, at) => {
    const key = `rpc.workers[${at}] (${w.name})`
    if (seen.has(w.name)) problems.push(`${key}: the name is used twice; each worker needs its own`)
    seen.add(w.name)
    const endpoint = parseHostPort(w.endpoint)
    if (endpoint === null) {
      problems.push(`${key}: endpoint ${JSON.stringify(w.endpoint)} is not host:port (such as 10.0.0.5:50052 or [fd00::5]:50052)`)
      return []
    }
    if (addressKind(endpoint.host) === 'public' && w.allow_public !== true) {
      problems.push(`${key}: endpoint ${w.endpoint} is a public address, and llama.cpp's RPC protocol has no authentication (anyone who reaches the worker can use it); put workers on a private network, a VPN or an SSH tunnel, or set allow_public: true on this worker if a firewall already keeps others out`)
    }
    return [{ name: w.name, endpoint, allowPublic: w.allow_public === true }]
  })
}

const UPSTREAM_NAME = /^[A-Za-z0-9._-]{1,64}$/
// A key goes out in a header line: printable ASCII, no spaces.
const UPSTREAM_KEY = /^[\x21-\x7e]+$/

/**
 * `upstreams`: names unique and plain, URLs http(s) with no query, fragment or credentials (the key has its own
 * field). Messages never quote a key: config errors are printed and logged.
 */
function upstreamConfigs (raw: RawConfig['upstreams'], limits: UpstreamLimits, problems: string[]): UpstreamConfig[] {
  const seen = new Set<string>()
  return raw.flatMap((u, at) => {
    const key = `upstreams[${at}] (${u.name})`
    const count = problems.length
    if (!UPSTREAM_NAME.test(u.name)) problems.push(`upstreams[${at}].name = ${JSON.stringify(u.name)} is not allowed: must be 1-64 of A-Z a-z 0-9 . _ -`)
    else if (seen.has(u.name)) problems.push(`${key}: the name is used twice; each upstream needs its own`)
    seen.add(u.name)
    const url = upstreamUrl(u.url)
    if (typeof url !== 'string') problems.push(`${key}: ${url.problem}`)
    const secret = u.key ?? null
    if (secret !== null && !UPSTREAM_KEY.test(secret)) problems.push(`${key}: key must be printable ASCII without spaces (or null for none)`)
    if (problems.length > count || typeof url !== 'string') return []
    return [{
      name: u.name, url, kind: u.kind, key: secret, models: u.models ?? [], prefix: u.prefix ?? '', maxConcurrent: u.max_concurrent ?? 16,
      ...(u.messages !== undefined ? { messages: u.messages } : {}), limits,
    }]
  })
}

/** The URL without trailing slashes, or what is wrong with it (a URL with a password in it is not quoted). */
function upstreamUrl (text: string): string | { problem: string } {
  const shown = `url ${JSON.stringify(text)} is not allowed`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { problem: `${shown}: must be a URL such as http://10.0.0.5:8080 or https://api.example.com/v1-proxy` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `${shown}: must start with http:// or https://` }
  if (url.username !== '' || url.password !== '') return { problem: 'url is not allowed: it must carry no user or password; put the upstream\'s key in key' }
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(text)) return { problem: `${shown}: must have no query (?) or fragment (#)` }
  return (url.origin + url.pathname).replace(/\/+$/, '')
}

function setPath (target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target
  for (const part of path.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {}
    node = node[part] as Record<string, unknown>
  }
  node[path[path.length - 1]!] = value
}

function valueAt (value: unknown, path: string[]): unknown {
  let node = value
  for (const part of path) node = isPlainObject(node) || Array.isArray(node) ? (node as any)[part] : undefined
  return node
}

function isPlainObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function numberOrText (text: string): unknown {
  return /^-?\d+$/.test(text.trim()) ? Number(text) : text
}

function list (text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '')
}
