import { BadRequestError } from '../../core/base/errors.js'

/** Ollama's `TokenLogprob`: a token, its log probability and its UTF-8 bytes. */
export interface OllamaTokenLogprob { token: string, logprob: number, bytes?: number[] }
/** Ollama's `Logprob`: a generated token, with the likeliest alternatives at its place when asked for. */
export interface OllamaLogprob extends OllamaTokenLogprob { top_logprobs?: OllamaTokenLogprob[] }

/** Ollama's bound on `top_logprobs`. */
const MOST = 20

/**
 * What a request's `logprobs` and `top_logprobs` ask for: null for none; `top_logprobs` out of 0..20 is Ollama's
 * 400. As in Ollama, `top_logprobs` alone asks for nothing. @throws BadRequestError
 */
export function logprobsAsked (logprobs: boolean | undefined, top: number | undefined): { top: number } | null {
  if (top !== undefined && (top < 0 || top > MOST)) throw new BadRequestError(`top_logprobs must be between 0 and ${MOST}`, 'invalid_top_logprobs')
  return logprobs === true ? { top: top ?? 0 } : null
}

/**
 * llama-server's fields for them. It tells a token's probability only beside at least one alternative (`n_probs`
 * > 0), so one is asked for at least and left out of the answer when none was wanted, as Ollama does.
 */
export function logprobFields (api: 'chat' | 'completion', top: number): Record<string, unknown> {
  return api === 'chat' ? { logprobs: true, top_logprobs: Math.max(top, 1) } : { n_probs: Math.max(top, 1) }
}

interface RuntimeProb { token?: unknown, logprob?: unknown, bytes?: unknown, top_logprobs?: unknown }

/** llama-server's probabilities (`completion_probabilities`, or a chat choice's `logprobs.content`) in Ollama's shape. */
export function ollamaLogprobs (probs: unknown, top: number): OllamaLogprob[] {
  if (!Array.isArray(probs)) return []
  return (probs as RuntimeProb[]).map((p) => {
    const alternatives = Array.isArray(p.top_logprobs) ? (p.top_logprobs as RuntimeProb[]).slice(0, top).map(tokenLogprob) : []
    return { ...tokenLogprob(p), ...(alternatives.length > 0 ? { top_logprobs: alternatives } : {}) }
  })
}

function tokenLogprob (p: RuntimeProb): OllamaTokenLogprob {
  return {
    token: typeof p.token === 'string' ? p.token : '',
    // JSON has no -Infinity: llama-server says an impossible token with the lowest float32, and so does this.
    logprob: typeof p.logprob === 'number' ? p.logprob : -3.4028234663852886e38,
    ...(Array.isArray(p.bytes) ? { bytes: p.bytes as number[] } : {}),
  }
}
