import { tokenCount } from './answer-numbers.js'

/** Tokens one answer read (its whole prompt, cached tokens included) and generated; null where it did not say. */
export interface AnswerUsage { prompt: number | null, generated: number | null }

/** How many of the last bytes of a streamed answer to keep for `answerUsage`: its last event, with room to spare. */
export const USAGE_TAIL_BYTES = 2048

/**
 * The token counts at the end of one of llama-server's answers in a client's own shape, whole or the last bytes of a
 * stream, read without parsing the rest (relayed streams are never parsed). llama-server ends them with `timings`
 * (chat and text completions, whole or streamed) or else `usage` (Anthropic Messages; a streamed Messages answer
 * says only its output tokens at the end, its input in message_start). A key in generated text is JSON-escaped
 * inside a string, so the last `"timings":{` unescaped is llama-server's own. Null when neither is there.
 * @throws an error of the answer for a count that cannot be (answer-numbers.ts): it is never booked
 */
export function answerUsage (text: string): AnswerUsage | null {
  const timings = lastObject(text, '"timings":')
  if (timings !== null) {
    const prompt = tokenCount(timings.prompt_n, 'timings.prompt_n')
    const cached = tokenCount(timings.cache_n, 'timings.cache_n')
    return { prompt: prompt === null ? null : prompt + (cached ?? 0), generated: tokenCount(timings.predicted_n, 'timings.predicted_n') }
  }
  const usage = lastObject(text, '"usage":')
  if (usage === null) return null
  // OpenAI's prompt_tokens counts cached tokens; Anthropic's input_tokens does not.
  const prompt = tokenCount(usage.prompt_tokens, 'usage.prompt_tokens')
  const input = prompt ?? tokenCount(usage.input_tokens, 'usage.input_tokens')
  const cached = prompt === null ? tokenCount(usage.cache_read_input_tokens, 'usage.cache_read_input_tokens') ?? 0 : 0
  const generated = tokenCount(usage.completion_tokens, 'usage.completion_tokens') ?? tokenCount(usage.output_tokens, 'usage.output_tokens')
  return { prompt: input === null ? null : input + cached, generated }
}

/**
 * Of the prompt tokens `answerUsage` reads from the same text, those the runtime took from its cache rather than
 * evaluating: `timings.cache_n`, OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
 * `cache_read_input_tokens`. 0 where the answer does not say.
 */
export function answerCachedTokens (text: string): number {
  const timings = lastObject(text, '"timings":')
  if (timings !== null) return tokenCount(timings.cache_n, 'timings.cache_n') ?? 0
  const usage = lastObject(text, '"usage":')
  if (usage === null) return 0
  const details = usage.prompt_tokens_details
  const openai = typeof details === 'object' && details !== null ? tokenCount((details as Record<string, unknown>).cached_tokens, 'usage.prompt_tokens_details.cached_tokens') : null
  return openai ?? tokenCount(usage.cache_read_input_tokens, 'usage.cache_read_input_tokens') ?? 0
}

function lastObject (text: string, key: string): Record<string, unknown> | null {
  const at = text.lastIndexOf(key)
  if (at === -1) return null
  const start = at + key.length
  if (text[start] !== '{') return null
  // The objects read here hold numbers and small objects of numbers: the first brace that closes the one opened is its end.
  let depth = 0
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (c === '{') depth++
    else if (c === '}' && --depth === 0) {
      try {
        return JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>
      } catch {
        return null
      }
    }
  }
  return null
}
