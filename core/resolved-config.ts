import type { Backend, RawConfig } from './config-schema.js'
import type { HostPort } from './host-port.js'
import type { Options } from './options-schema.js'

/**
 * The resolved configuration the app runs with: durations in ms, sizes in bytes, paths absolute. The core's keys
 * are `CoreConfig`'s; each plugin adds its section's fields to this interface by declaration merging, beside the
 * config section that resolves them (core/config-section.ts), so that the core names none of them.
 */
export interface Config extends CoreConfig {
  limits: ConfigLimits
}

/** `limits`: the core's, and those the plugins' sections add (declaration merging, as `Config`). */
export interface ConfigLimits extends CoreLimits {}

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
   * Per model: option overrides, llama-server arguments (model files resolved), preloading and its keep-alive. A Map,
   * as every table keyed by a model name: a name such as `constructor` must find nothing, not Object's own.
   */
  models: ReadonlyMap<string, ModelConfig>
  limits: CoreLimits
  runtime: 'auto' | Backend
  /** Build the runtime for a GPU found without one, in the background at start (its toolkit must be there). */
  buildGpuRuntime: boolean
  runtimes: Partial<Record<Backend, { bin: string }>>
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
