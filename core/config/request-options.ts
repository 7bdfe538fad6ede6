import { availableParallelism } from 'node:os'
import { BadRequestError } from '../base/errors.js'
import { KNOWN_OPTIONS, LOAD_TIME_OPTIONS, type LoadOptions, type Options } from './options-schema.js'

export type OptionValues = Record<string, unknown>

/** Where a request's options come from, lowest first (contract: Options). Each layer is as its author wrote it. */
export interface OptionLayers {
  /** config.yaml's `default_options`. */
  defaults: Options
  /** The options the model was created with (`/api/create`, a Modelfile's PARAMETER lines). */
  parameters?: OptionValues | null
  /** config.yaml's `models.<name>.options`: over the model's own. */
  configured?: Options
  /** The request's `options` object, as received. */
  request?: OptionValues
  /** The surface's own top-level fields that are options (OpenAI's `max_tokens`, `temperature`): they win over `options`. */
  overrides?: OptionValues
}

/** What a request's options mean once every layer is applied. */
export interface ResolvedOptions {
  /** Load-time options a new instance would be started with. */
  load: Required<Omit<LoadOptions, 'n_gpu_layers' | 'num_thread'>> & Pick<LoadOptions, 'n_gpu_layers' | 'num_thread'>
  /** Only the load-time options this request set itself: an instance must match these to serve it. */
  loadRequested: LoadOptions
  /** Sampling options sent to the runtime with the request; `num_predict` is `max_tokens` here. */
  sampling: Omit<Options, (typeof LOAD_TIME_OPTIONS)[number] | 'num_predict'>
  /** Keys of the request's `options` the gateway does not know: ignored, worth a log line. */
  unknown: string[]
}

const LOAD_KEYS = new Set<string>(LOAD_TIME_OPTIONS)
const KNOWN_KEYS = new Set<string>(KNOWN_OPTIONS)
// Ollama's clients say num_predict, the contract says max_tokens: one setting under two names.
const ALIAS: Readonly<Record<string, string>> = { num_predict: 'max_tokens', max_tokens: 'num_predict' }

/**
 * `upper` over `lower`, key by key; a setting given under either of its names replaces both. Within one layer
 * max_tokens wins over num_predict (the contract's name over Ollama's).
 */
export function overlay (lower: OptionValues | null | undefined, upper: OptionValues | null | undefined): OptionValues {
  const merged: OptionValues = { ...oneName(lower) }
  for (const [key, value] of Object.entries(oneName(upper))) {
    if (value === undefined) continue
    const alias = ALIAS[key]
    if (alias !== undefined) delete merged[alias]
    merged[key] = value
  }
  return merged
}

function oneName (layer: OptionValues | null | undefined): OptionValues {
  if (layer?.max_tokens === undefined || layer.num_predict === undefined) return layer ?? {}
  const { num_predict: _shadowed, ...rest } = layer
  return rest
}

/** A model's own options: those it was created with, under config.yaml's `models.<name>.options` (also /api/show's). */
export function modelOptions (parameters: OptionValues | null | undefined, configured: Options | undefined): OptionValues {
  return overlay(parameters, configured)
}

/**
 * An API's top-level fields that are options of the contract (OpenAI's `temperature`, Responses'
 * `max_output_tokens`, ...), as the `overrides` layer: `fields` maps each field to the option it sets; null and
 * absent fields set nothing.
 */
export function topLevelOverrides (body: OptionValues, fields: Readonly<Record<string, string>>): OptionValues {
  const overrides: OptionValues = {}
  for (const [field, option] of Object.entries(fields)) {
    if (body[field] !== undefined && body[field] !== null) overrides[option] = body[field]
  }
  return overrides
}

/**
 * The one options pipeline: layers (defaults → the model's own → the request's options → the surface's top-level
 * fields), names num_predict as max_tokens, and splits load-time options (they shape the runtime process) from
 * sampling ones (they go with each request).
 */
export function resolveOptions (layers: OptionLayers): ResolvedOptions {
  const requested = overlay(layers.request, layers.overrides)
  const merged = overlay(overlay(layers.defaults, modelOptions(layers.parameters, layers.configured)), requested)
  const load: OptionValues = {}
  const loadRequested: OptionValues = {}
  const sampling: OptionValues = {}
  for (const [key, value] of Object.entries(merged)) {
    // Unknown keys go nowhere: none reaches llama-server, where a key such as tool_choice or grammar would change
    // what it does behind the gateway's back.
    if (!KNOWN_KEYS.has(key)) continue
    if (LOAD_KEYS.has(key)) {
      load[key] = value
      if (requested[key] !== undefined) loadRequested[key] = value
    } else if (key === 'num_predict') {
      // Ollama's -2 ("until the context is full") is llama-server's -1.
      sampling.max_tokens = (value as number) < 0 ? -1 : value
    } else {
      sampling[key] = value
    }
  }
  // More threads than CPUs only slows llama-server, and started that many (1,036 for num_thread 1024): a client's
  // own ask is held to the machine; config's is the admin's to choose.
  const threads = loadRequested.num_thread
  const cpus = typeof threads === 'number' ? availableParallelism() : Infinity
  if (typeof threads === 'number' && threads > cpus) {
    throw new BadRequestError(`options num_thread ${threads}: this machine has ${cpus} CPUs, so at most ${cpus}`, 'invalid_option')
  }
  const unknown = Object.keys(layers.request ?? {}).filter((key) => !KNOWN_KEYS.has(key))
  return { load: load as ResolvedOptions['load'], loadRequested, sampling, unknown }
}
