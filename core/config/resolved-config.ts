import type { Backend, RawConfig } from './config-schema.js'
import type { HostPort } from '../base/host-port.js'
import type { Options } from './options-schema.js'
import type { RuntimeKind } from './runtime-kinds.js'

/**
 * The resolved configuration the app runs with: durations in ms, sizes in bytes, paths absolute. The core's keys
 * are `CoreConfig`'s; each plugin adds its section's fields to this interface by declaration merging, beside the
 * config section that resolves them (core/config/config-section.ts), so that the core names none of them.
 */
export interface Config extends CoreConfig {
  limits: ConfigLimits
}

/** `limits`: the core's, and those the plugins' sections add (declaration merging, as `Config`). */
export interface ConfigLimits extends CoreLimits {}

/**
 * One model's entry of `models`, resolved: the core's fields, and those the plugins' sections add for their
 * per-model keys (declaration merging, as `Config`; each optional, since a model may leave its key out).
 */
export interface ModelConfig extends CoreModelConfig {}

/** `ollama_listen`, resolved: where Ollama's clients are served. */
export interface OllamaAddress extends HostPort {
  /**
   * An address the user named: not being able to listen there stops the start. `auto`'s (Ollama's own port, taken
   * when Ollama itself runs) is not: the start goes on without it and says so.
   */
  required: boolean
}

/** The core's own keys of config.yaml, resolved. */
export interface CoreConfig {
  host: string
  port: number
  /** A second address serving the same app, where native streams default to NDJSON (Ollama's clients); null: none. */
  ollamaListen: OllamaAddress | null
  dataDir: string
  modelsDir: string
  logLevel: RawConfig['log_level']
  keepAliveMs: number
  streamFormat: 'sse' | 'ndjson'
  defaultOptions: Options
  /**
   * Per model: its option overrides, and what the plugins' sections resolve of their keys. A Map, as every table
   * keyed by a model name: a name such as `constructor` must find nothing, not Object's own.
   */
  models: ReadonlyMap<string, ModelConfig>
  limits: CoreLimits
  runtime: 'auto' | Backend
  /** Build the runtime for a GPU found without one, in the background at start (its toolkit must be there). */
  buildGpuRuntime: boolean
  runtimes: Partial<Record<Backend, { bin: string }>>
  /** The runtime kinds the listed plugins add (their manifests' `runtimes`), in the plugins' order. */
  runtimeKinds: readonly RuntimeKind[]
  llamaCppSrc: string | null
  plugins: Array<{ path: string, options: Record<string, unknown> }>
  /** How long SIGTERM waits for answers and pulls in flight before cutting them. */
  shutdown: { drainTimeoutMs: number }
  /** Other names for models (`models.<name>.aliases`, `LLAMAGATE_ALIASES`), by their lower case, each with its model. */
  aliases: ReadonlyMap<string, string>
  /** The config file that was read, or null when none was. */
  configFile: string | null
}

/** The core's `limits`. */
export interface CoreLimits {
  bodySize: number, queueLength: number, maxLoadedModels: number, loadTimeoutMs: number, streamStallMs: number,
  /** How long a request's body may take to arrive whole after its head. */
  bodyTimeoutMs: number,
  /** How long a request's head may take to arrive whole. */
  headerTimeoutMs: number,
  /** Open connections per client address; and, with API keys on, connections no valid key was shown on yet. */
  connectionsPerClient: number, unauthenticatedConnections: number,
  /** How long a plugin's hook (an authenticator, a call hook: core/platform/call-hooks.ts) may take before its request fails. */
  hookTimeoutMs: number,
}

/** The core's keys of a model's entry, resolved (its `aliases` are `CoreConfig.aliases`). */
export interface CoreModelConfig {
  options?: Options
}
