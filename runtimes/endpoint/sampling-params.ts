import type { ResolvedOptions } from '../../core/config/request-options.js'

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
