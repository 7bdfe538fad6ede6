/** The decision types llama.cpp's server knows (`<arch>.decision.type`); any other is refused when asked. */
export const DECISION_TYPES = ['openjev', 'lev', 'nimble', 'pplx-decider', 'lfm2-d1', 'kev', 'laya', 'clef', 'lfm2-d1-omni'] as const

/**
 * What makes a GGUF a decision model (llama.cpp's server-decision): its decision type, the Jinja template that renders
 * one question (`tokenizer.chat_template.systemone`), and the calibration temperatures fitted for it, by suffix
 * (`choice.3_5`, `noul`, `choice.small`...).
 */
export interface DecisionInfo {
  type: string
  /** Null when the file has none: the model then cannot answer, and says so. */
  template: string | null
  temperatures: Record<string, number>
}

// A header is hostile: bound what is kept of it.
const MAX_TEMPERATURES = 64
const MAX_SUFFIX_LENGTH = 32

/**
 * The decision metadata of a GGUF's header, or null for a model that is not a decision model. Temperatures are kept
 * as llama.cpp reads them (a number or a numeric string); one that is not a finite positive number is left out.
 */
export function readDecisionInfo (meta: Record<string, unknown>, arch: string | null): DecisionInfo | null {
  if (arch === null) return null
  const type = meta[`${arch}.decision.type`]
  if (typeof type !== 'string' || type.length === 0 || type.length > 64) return null
  const prefix = `${arch}.decision.temperature.`
  const temperatures: Record<string, number> = Object.create(null) as Record<string, number>
  let kept = 0
  for (const [key, value] of Object.entries(meta)) {
    if (!key.startsWith(prefix) || kept >= MAX_TEMPERATURES) continue
    const suffix = key.slice(prefix.length)
    const t = typeof value === 'number' ? value : typeof value === 'string' ? Number.parseFloat(value) : NaN
    if (suffix.length === 0 || suffix.length > MAX_SUFFIX_LENGTH || !Number.isFinite(t) || t <= 0) continue
    temperatures[suffix] = t
    kept++
  }
  const template = meta['tokenizer.chat_template.systemone']
  return { type, template: typeof template === 'string' ? template : null, temperatures: { ...temperatures } }
}
