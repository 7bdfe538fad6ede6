import type { Pool } from 'undici'
import { chatStream } from './bench-chat.js'

/** One streamed answer, timed on the caller's clock, with llama-server's own counts of the prompt. */
export interface TurnResult {
  ok: boolean
  error?: string
  /** When the first text (reasoning or content) came; -1 if none did. */
  firstAt: number
  endAt: number
  text: string
  promptTokens: number
  cachedTokens: number
  /**
   * Prompt tokens evaluated for this answer: llama-server's timings.prompt_n where the stream carries its timings,
   * else usage's prompt tokens less its cached ones (the same counts, as llama-server reports them).
   */
  evaluatedTokens: number
}

/**
 * Sends a streamed /v1/chat/completions request and reads it to its end (bench-chat.ts's client, which sends again
 * on a pooled connection llama-server closed just before reuse), timed on the caller's clock: `now` counts
 * milliseconds as performance.now does, from an origin of the caller's.
 */
export async function streamTurn (pool: Pool, body: Record<string, unknown>, now: () => number): Promise<TurnResult> {
  const sentAt = now()
  const answer = await chatStream(pool, body)
  const firstAt = answer.ttftMs >= 0 ? sentAt + answer.ttftMs : -1
  const endAt = sentAt + answer.totalMs
  const error = answer.ok ? (firstAt < 0 ? 'no text in the answer' : undefined) : answer.error
  if (error !== undefined) return { ok: false, error, firstAt, endAt, text: answer.text, promptTokens: 0, cachedTokens: 0, evaluatedTokens: 0 }
  const { promptTokens, cachedTokens } = answer
  const evaluatedTokens = answer.promptEvaluated >= 0 ? answer.promptEvaluated : promptTokens - cachedTokens
  return { ok: true, firstAt, endAt, text: answer.text, promptTokens, cachedTokens, evaluatedTokens }
}
