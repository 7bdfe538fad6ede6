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
 */
export function ollamaStats (startedNs: bigint, loadDurationMs: number, timings: RuntimeTimings | undefined): OllamaStats {
  return {
    total_duration: Number(process.hrtime.bigint() - startedNs),
    load_duration: Math.round(loadDurationMs * MS),
    prompt_eval_count: (timings?.prompt_n ?? 0) + (timings?.cache_n ?? 0),
    prompt_eval_duration: Math.round((timings?.prompt_ms ?? 0) * MS),
    eval_count: timings?.predicted_n ?? 0,
    eval_duration: Math.round((timings?.predicted_ms ?? 0) * MS),
  }
}

/** llama-server's finish reasons as Ollama's `done_reason`. */
export function doneReason (finishReason: string | null | undefined): 'stop' | 'length' {
  return finishReason === 'length' || finishReason === 'limit' ? 'length' : 'stop'
}
