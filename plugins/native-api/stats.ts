import { duration, tokenCount } from '../../runtimes/index.js'

/** Ollama's statistics of a finished answer: durations in nanoseconds. */
export interface OllamaStats {
  total_duration: number
  load_duration: number
  prompt_eval_count: number
  prompt_eval_duration: number
  eval_count: number
  eval_duration: number
}

/** What llama-server reports about a finished generation (`timings` of its last event). */
export interface RuntimeTimings { prompt_n?: number, prompt_ms?: number, predicted_n?: number, predicted_ms?: number, cache_n?: number }

const MS = 1_000_000

/**
 * Ollama's statistics for the final event (contract: Streams), in nanoseconds. `prompt_eval_count` counts
 * cached prompt tokens too, as Ollama's does.
 * @throws an error of the answer for a count that cannot be (tokenCount): it is never booked
 */
export function ollamaStats (startedNs: bigint, loadDurationMs: number, timings: RuntimeTimings | undefined): OllamaStats {
  return {
    total_duration: Number(process.hrtime.bigint() - startedNs),
    load_duration: Math.round(loadDurationMs * MS),
    prompt_eval_count: cachedTokens(timings) + (tokenCount(timings?.prompt_n, 'timings.prompt_n') ?? 0),
    prompt_eval_duration: Math.round(duration(timings?.prompt_ms) * MS),
    eval_count: tokenCount(timings?.predicted_n, 'timings.predicted_n') ?? 0,
    eval_duration: Math.round(duration(timings?.predicted_ms) * MS),
  }
}

/** The prompt tokens the runtime took from its cache (`cache_n`), 0 where it does not say. @throws as ollamaStats */
export function cachedTokens (timings: RuntimeTimings | undefined): number {
  return tokenCount(timings?.cache_n, 'timings.cache_n') ?? 0
}

/** llama-server's finish reasons as Ollama's `done_reason`. */
export function doneReason (finishReason: string | null | undefined): 'stop' | 'length' {
  return finishReason === 'length' || finishReason === 'limit' ? 'length' : 'stop'
}
