import { KNOWN_OPTIONS, LOAD_TIME_OPTIONS, type LoadOptions, type Options } from './options-schema.js'

/** What a request's options mean once defaults and per-model overrides are applied. */
export interface ResolvedOptions {
  /** Load-time options a new instance would be started with (defaults < per-model < request). */
  load: Required<Omit<LoadOptions, 'n_gpu_layers' | 'num_thread'>> & Pick<LoadOptions, 'n_gpu_layers' | 'num_thread'>
  /** Only the load-time options this request set itself: an instance must match these to serve it. */
  loadRequested: LoadOptions
  /** Sampling options sent to the runtime with the request. */
  sampling: Omit<Options, (typeof LOAD_TIME_OPTIONS)[number]>
}

const LOAD_KEYS = new Set<string>(LOAD_TIME_OPTIONS)
const KNOWN_KEYS = new Set<string>(KNOWN_OPTIONS)

/**
 * Layers options as the contract says: config defaults, then the model's overrides in config.yaml, then the
 * request. Load-time options shape the runtime process; the rest go with each request.
 */
export function resolveOptions (defaults: Options, modelOverrides: Options | undefined, request: Record<string, unknown> | undefined): ResolvedOptions {
  const merged: Record<string, unknown> = { ...defaults, ...modelOverrides, ...request }
  const load: Record<string, unknown> = {}
  const loadRequested: Record<string, unknown> = {}
  const sampling: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(merged)) {
    // Unknown keys are ignored (the contract; the surface logs them): none reaches llama-server, where a key
    // such as tool_choice or grammar would change what it does behind the gateway's back.
    if (value === undefined || !KNOWN_KEYS.has(key)) continue
    if (LOAD_KEYS.has(key)) load[key] = value
    else sampling[key] = value
  }
  for (const key of LOAD_TIME_OPTIONS) {
    if (request?.[key] !== undefined) loadRequested[key] = request[key]
  }
  return { load: load as ResolvedOptions['load'], loadRequested, sampling }
}

/** Option keys the contract does not know: ignored, but worth a log line. */
export function unknownOptionKeys (request: Record<string, unknown> | undefined, known: readonly string[]): string[] {
  if (!request) return []
  return Object.keys(request).filter((k) => !known.includes(k))
}

/** Ollama clients say `num_predict`; the contract says `max_tokens`. A request's own value wins over defaults. */
export function normalizeRequestOptions (options: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!options || options.num_predict === undefined || options.max_tokens !== undefined) return options
  const predict = options.num_predict as number
  return { ...options, max_tokens: predict < 0 ? -1 : predict }
}
