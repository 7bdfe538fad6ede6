import { resolveOptions } from '../../core/config/request-options.js'
import { growthCap, servedContext } from './context-fit.js'
import type { Instance } from './instance.js'
import type { SchedulableModel, SchedulerSettings } from './ports.js'

/**
 * What a model's context is, as every discovery surface reports it (docs/api.md, "Context lengths"): one answer,
 * from the GGUF, the instances loaded and the options a load would get.
 */
export interface ContextWindow {
  /** The GGUF's trained context (`<arch>.context_length`); null when its header says none. */
  trained: number | null
  /** What one slot of its loaded (or loading) instance holds now, the largest of them; null while none is. */
  loaded: number | null
  /**
   * The most one request may fill: a chat model's context grows to hold a longer prompt up to this (context-fit.ts);
   * embeddings and reranking are cut to the context their instance loads with, which does not grow.
   */
  max: number
}

/** The context window of `model`, with `instances` the scheduler's (only those of this model are read). */
export function contextWindow (model: SchedulableModel, instances: readonly Instance[], settings: SchedulerSettings): ContextWindow {
  const trained = model.gguf?.context_length ?? null
  const chat = (model.kind ?? 'chat') === 'chat'
  const mine = instances.filter((i) => i.model.name === model.name && i.process !== null && !i.ending && (i.purpose === 'generate') === chat)
  const loaded = mine.length === 0 ? null : Math.max(...mine.map((i) => servedContext(i.options.num_ctx, trained)))
  if (chat) return { trained, loaded, max: growthCap(trained, loaded ?? 0) }
  // Embeddings and reranking: the context their load gets (config.yaml's num_ctx, capped at the trained one).
  const { load } = resolveOptions({ defaults: settings.defaultOptions, parameters: model.parameters, configured: settings.modelOptions.get(model.name)?.options })
  return { trained, loaded, max: Math.max(servedContext(load.num_ctx, trained), loaded ?? 0) }
}
