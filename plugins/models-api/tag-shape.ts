import type { GgufInfo } from '../storage/manifest.js'
import { capabilities } from '../inference/model-capabilities.js'
import type { ModelRecord } from '../storage/model-record.js'

/** What Ollama's `details` are made of: a model's format and what its GGUF says (absent fields read as unknown). */
interface DetailsSource {
  format: string
  gguf?: Partial<Pick<GgufInfo, 'architecture' | 'parameter_count' | 'file_type'>> | null
}

/** Ollama's `details` of a model, as /api/tags, /api/show and /api/ps give them. */
export function ollamaDetails (model: DetailsSource) {
  const g = model.gguf
  return {
    parent_model: '',
    format: model.format,
    family: g?.architecture ?? null,
    families: g?.architecture ? [g.architecture] : null,
    parameter_size: formatParameterCount(g?.parameter_count ?? null),
    quantization_level: g?.file_type ?? null,
  }
}

/** A model as Ollama's /api/tags lists it (and /api/import answers it), with what it can do (`decision` among them). */
export function tagOf (r: ModelRecord) {
  return { name: r.name, model: r.name, size: r.size, format: r.format, modified_at: r.modified_at, digest: r.digest, details: ollamaDetails(r), capabilities: capabilities(r) }
}

/** /api/show's `details`: Ollama's flat details, beside every field of the spec's model record (rest-interface §2.2). */
export function showDetails (r: ModelRecord) {
  // `format` is the same in both: the record's and Ollama's.
  const { details, ...tag } = tagOf(r)
  return { ...details, ...tag }
}

/** A model's context as the listings report it (the scheduler's ContextWindow). */
export interface Window { trained: number | null, loaded: number | null, max: number }

/**
 * A model as OpenAI's /v1/models lists it, with its context window under the names agents read: `context_window`,
 * LM Studio's `max_context_length`, and llama-server's `meta` (`n_ctx_train`, and `n_ctx` the most a request may fill,
 * since llamagate grows a loaded context to it; what a slot holds now is /api/ps's `context_length`).
 */
export function openAiModel (r: ModelRecord, window: Window) {
  const can = capabilities(r)
  return {
    id: r.name, object: 'model' as const, created: Math.floor(Date.parse(r.modified_at) / 1000), owned_by: r.name.split('/')[0]!,
    context_window: window.max, max_context_length: window.max,
    meta: { n_ctx: window.max, n_ctx_train: window.trained, n_params: r.gguf?.parameter_count ?? null, size: r.size },
    capabilities: can,
    // llama-server's marks: a decision model's output is decisions, not text.
    architecture: { input_modalities: ['text', ...(can.includes('vision') ? ['image'] : []), ...(can.includes('audio') ? ['audio'] : [])], output_modalities: can.includes('decision') ? ['decisions'] : ['text'] },
  }
}

/**
 * A model as the `models` list of /v1/models gives it beside OpenAI's `data`: the TypeSafe SDK's model card
 * (`name`, `description`, `release_date`), which its client requires, with the capabilities llama-server's and Ollama's
 * lists carry. `id` names it as in `data`.
 */
export function modelCard (r: ModelRecord) {
  const can = capabilities(r)
  return {
    id: r.name, name: r.name, model: r.name,
    description: r.gguf?.decision != null ? `${r.gguf.decision.type} decision model` : `${r.gguf?.architecture ?? 'language'} model`,
    release_date: r.modified_at.slice(0, 10),
    capabilities: can,
  }
}

/**
 * Anthropic's model object (its SDK's ModelInfo): its SDKs list models with `anthropic-version` set. The limits are
 * the most a request may fill (the context grows to it; a reply may fill what the prompt leaves of it); its capabilities what its
 * template and files show (model-capabilities.ts), and, of Anthropic's features, JSON schemas (llama-server's grammar).
 */
export function anthropicModel (r: ModelRecord, window: Window) {
  const context = window.max
  return {
    type: 'model' as const, id: r.name, display_name: r.name, created_at: r.modified_at,
    max_input_tokens: context, max_tokens: context, capabilities: anthropicCapabilities(capabilities(r)),
  }
}

const NO = { supported: false }

/** ModelCapabilities, from what a model can do (Ollama's words: `tools`, `thinking`, `vision`). */
function anthropicCapabilities (can: string[]) {
  const thinking = can.includes('thinking')
  return {
    batch: NO, citations: NO, code_execution: NO, pdf_input: NO,
    context_management: { supported: false, clear_thinking_20251015: null, clear_tool_uses_20250919: null, compact_20260112: null },
    effort: { supported: false, low: NO, medium: NO, high: NO, max: NO, xhigh: null },
    image_input: { supported: can.includes('vision') },
    structured_outputs: { supported: can.includes('completion') },
    thinking: { supported: thinking, types: { enabled: { supported: thinking }, adaptive: NO } },
  }
}

/** `7.6B`, `135M`, as Ollama writes parameter sizes. */
function formatParameterCount (count: number | null): string | null {
  if (count === null) return null
  if (count >= 1e9) return `${(count / 1e9).toFixed(1)}B`
  if (count >= 1e6) return `${(count / 1e6).toFixed(count >= 1e8 ? 0 : 1)}M`
  return `${(count / 1e3).toFixed(1)}K`
}

/** An upstream's model (config.yaml's upstreams), as the listings need it. */
export interface RemoteModel {
  name: string
  remoteModel: string
  upstream: { name: string, url: string }
  /** When its upstream last answered a probe (ms since epoch). */
  checkedAt: number
}

/** A remote model as /api/tags lists it: nothing stored here (size 0, no digest), and Ollama's marks of where it runs. */
export function remoteTag (m: RemoteModel) {
  return {
    name: m.name, model: m.name, size: 0, format: 'remote', modified_at: new Date(m.checkedAt).toISOString(), digest: '',
    details: ollamaDetails({ format: 'remote', gguf: null }), remote_model: m.remoteModel, remote_host: m.upstream.url,
  }
}

/** A remote model as OpenAI's /v1/models lists it: owned by its upstream. */
export function openAiRemoteModel (m: RemoteModel) {
  return { id: m.name, object: 'model' as const, created: Math.floor(m.checkedAt / 1000), owned_by: m.upstream.name }
}

/** A remote model as Anthropic's model list shows it: what it can do and hold is its upstream's, unknown here. */
export function anthropicRemoteModel (m: RemoteModel) {
  return { type: 'model' as const, id: m.name, display_name: m.name, created_at: new Date(m.checkedAt).toISOString(), max_input_tokens: null, max_tokens: null, capabilities: null }
}
