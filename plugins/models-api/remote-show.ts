import type { Static } from 'typebox'
import type { UpstreamConfig } from '../upstreams/upstream-config.js'
import { RuntimeError } from '../../core/base/errors.js'
import { showUpstreamModel } from '../upstreams/upstream-client.js'
import type { ShowReply } from './schemas.js'
import { ollamaDetails } from './tag-shape.js'

/** How long /api/show waits for an upstream to describe its model. */
const SHOW_TIMEOUT_MS = 10_000

/** An upstream's model as /api/show needs it (plugins/upstreams' catalog finds it). */
export interface ShownRemoteModel {
  name: string
  remoteModel: string
  upstream: UpstreamConfig
  healthy: boolean
  /** When its upstream last answered a probe (ms since epoch). */
  checkedAt: number
  error?: string | null
}

/** What the upstream said of its model, as far as it is read here. */
interface UpstreamShow {
  details?: { family?: string | null, families?: string[] | null, parameter_size?: string | null, quantization_level?: string | null }
  model_info?: Record<string, unknown>
  template?: string
  parameters?: string
  system?: string
  capabilities?: string[]
}

/**
 * Ollama's /api/show of an upstream's model, as Ollama shows its remote models: nothing stored here (format
 * `remote`, size 0, no digest), `remote_model` and `remote_host` for where it runs, and what the upstream itself says
 * of it where it can (another llamagate, Ollama: its family and size, model_info, template, capabilities). An
 * OpenAI-compatible engine says nothing of a model beyond its name: it is shown as a completion model.
 * `parameters`: config.yaml's options for the name served here, which go with every request to it, else the
 * upstream's own.
 * @throws RuntimeError ('upstream_unavailable', 502) when the upstream is down or does not answer
 */
export async function remoteShow (m: ShownRemoteModel, parameters: string, verbose: boolean): Promise<Static<typeof ShowReply>> {
  const unavailable = (why: string): RuntimeError => new RuntimeError(`upstream "${m.upstream.name}" is unavailable for model "${m.name}": ${why}`, [], 'upstream_unavailable')
  if (!m.healthy) throw unavailable(m.error ?? 'it did not answer its last probe')
  let shown: UpstreamShow
  try {
    shown = (await showUpstreamModel(m.upstream, m.remoteModel, verbose, AbortSignal.timeout(SHOW_TIMEOUT_MS)) ?? {}) as UpstreamShow
  } catch (err) {
    throw unavailable((err as Error).message)
  }
  const modified = new Date(m.checkedAt).toISOString()
  const details = { ...ollamaDetails({ format: 'remote', gguf: null }), ...pickDetails(shown.details) }
  return {
    modelfile: '',
    details: { ...details, name: m.name, model: m.name, size: 0, format: 'remote', modified_at: modified, digest: '' },
    model_info: isRecord(shown.model_info) ? shown.model_info : {},
    template: typeof shown.template === 'string' ? shown.template : '',
    parameters: parameters !== '' ? parameters : typeof shown.parameters === 'string' ? shown.parameters : '',
    ...(typeof shown.system === 'string' && shown.system !== '' ? { system: shown.system } : {}),
    // Images go to the upstream as they came: its model's capabilities are its own.
    capabilities: Array.isArray(shown.capabilities) ? shown.capabilities.filter((c): c is string => typeof c === 'string') : ['completion'],
    modified_at: modified,
    remote_model: m.remoteModel,
    remote_host: m.upstream.url,
  }
}

/** The upstream's family, sizes and quantization, where it gave them as Ollama's details have them. */
function pickDetails (details: UpstreamShow['details']): Partial<Record<'family' | 'parameter_size' | 'quantization_level', string> & { families: string[] }> {
  if (!isRecord(details)) return {}
  const picked: ReturnType<typeof pickDetails> = {}
  for (const key of ['family', 'parameter_size', 'quantization_level'] as const) {
    const value = details[key]
    if (typeof value === 'string' && value !== '') picked[key] = value
  }
  if (Array.isArray(details.families) && details.families.every((f) => typeof f === 'string')) picked.families = details.families as string[]
  return picked
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
