import { tokenCount } from '../../../runtimes/index.js'

/** What a detour asks of an upstream, in the upstream's own paths: a whole JSON answer, or a streamed one's events. */
export interface UpstreamCalls {
  /** The whole answer to a POST, parsed. @throws as RuntimeEndpoint's postJson */
  json (path: string, body: unknown, signal: AbortSignal): Promise<unknown>
  /** The events of a streamed answer, SSE or NDJSON alike (answer-lines.ts). Resolves once the status is known good. */
  events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>>
}

/**
 * One call in one of llama-server's paths, made instead in paths the upstream has, its answer reshaped into what the
 * path asked for would have answered. Each is made for one call (its body and signal already given).
 */
export interface Detour {
  /** The whole answer (`post`, `postJson`). */
  whole (): Promise<unknown>
  /** The streamed answer's events (`events`); resolves once the upstream's status is known good. @default absent: events are asked as they are */
  events? (): Promise<AsyncGenerator<unknown>>
  /** The streamed answer as the SSE text a client of the asked path reads, event by event (`relay`). @default absent: a relay goes as asked */
  sse? (): Promise<AsyncGenerator<string>>
}

/** llama-server's `timings` of a finished answer, as far as the gateway reads them (token counts and durations). */
export interface Timings { prompt_n: number, predicted_n: number, cache_n?: number, prompt_ms?: number, predicted_ms?: number }

/**
 * An answer's (or event's) token counts as llama-server's `timings`: its own where it has them (llama-server, a
 * llamagate), else from OpenAI's `usage` (vLLM, Ollama's /v1: prompt_tokens counts cached tokens too), else null.
 * @throws an error of the answer for a count that cannot be (answer-numbers.ts)
 */
export function timingsOf (answer: unknown): Timings | null {
  const { timings, usage } = (answer ?? {}) as { timings?: unknown, usage?: Record<string, unknown> | null }
  if (typeof timings === 'object' && timings !== null) {
    const own = timings as Record<string, unknown>
    // Checked here, where an upstream's counts enter; the durations go on as they came (surfaces only show them).
    for (const field of ['prompt_n', 'predicted_n', 'cache_n']) tokenCount(own[field], `timings.${field}`)
    return timings as Timings
  }
  if (typeof usage !== 'object' || usage === null) return null
  const prompt = tokenCount(usage.prompt_tokens, 'usage.prompt_tokens')
  const generated = tokenCount(usage.completion_tokens, 'usage.completion_tokens')
  if (prompt === null && generated === null) return null
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined
  const cached = Math.min(tokenCount(details?.cached_tokens, 'usage.prompt_tokens_details.cached_tokens') ?? 0, prompt ?? 0)
  return { prompt_n: (prompt ?? 0) - cached, predicted_n: generated ?? 0, ...(cached > 0 ? { cache_n: cached } : {}) }
}

/** The events of a stream that ended without saying why it stopped: it was cut. */
export function endedEarly (): Error {
  return new Error('the upstream ended the stream early')
}
