import type { ResolvedOptions } from '../../core/request-options.js'

/**
 * The sampling options of a request as llama-server's request fields. Most keep their names; `max_tokens`
 * is `n_predict` on the native /completion endpoint, and Ollama's `num_keep` is `n_keep`.
 */
export function runtimeSampling (sampling: ResolvedOptions['sampling'], endpoint: 'chat' | 'completion'): Record<string, unknown> {
  const params: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(sampling)) {
    if (value === undefined || key === 'num_predict') continue
    if (key === 'max_tokens') params[endpoint === 'chat' ? 'max_tokens' : 'n_predict'] = value
    else if (key === 'num_keep') params.n_keep = value
    else if (key === 'seed' && value === -1) continue // llama-server's own default is random
    else params[key] = value
  }
  return params
}

/** Ollama clients say `num_predict`; the contract says `max_tokens`. A request's own value wins over defaults. */
export function normalizeRequestOptions (options: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!options || options.num_predict === undefined || options.max_tokens !== undefined) return options
  const predict = options.num_predict as number
  return { ...options, max_tokens: predict < 0 ? -1 : predict }
}

/** Ollama's `format` ("json" or a JSON schema) as an OpenAI `response_format` for llama-server. */
export function responseFormat (format: unknown): Record<string, unknown> | undefined {
  if (format === undefined || format === null || format === '') return undefined
  if (format === 'json') return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'format', schema: format } }
}
