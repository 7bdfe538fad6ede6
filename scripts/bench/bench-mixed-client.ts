import type { Pool } from 'undici'

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

type Usage = { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } }
type Event = {
  choices?: Array<{ delta?: { content?: string | null, reasoning_content?: string | null } }>
  usage?: Usage
  timings?: { prompt_n?: number, cache_n?: number }
  error?: unknown
}

/**
 * Sends a streamed /v1/chat/completions request and reads it to its end. llama-server closes a kept-alive
 * connection it has left idle: a pooled one it closed just before reuse fails before any byte, and is sent again.
 */
export async function streamTurn (pool: Pool, body: Record<string, unknown>, now: () => number): Promise<TurnResult> {
  const first = await attempt(pool, body, now)
  if (first.ok || first.firstAt >= 0 || !/other side closed|ECONNRESET|socket/i.test(first.error ?? '')) return first
  return attempt(pool, body, now)
}

async function attempt (pool: Pool, body: Record<string, unknown>, now: () => number): Promise<TurnResult> {
  let firstAt = -1
  let text = ''
  let usage: Usage = {}
  let promptN: number | undefined
  let done = false
  const failed = (error: string): TurnResult => ({ ok: false, error, firstAt, endAt: now(), text, promptTokens: 0, cachedTokens: 0, evaluatedTokens: 0 })
  try {
    const response = await pool.request({
      method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    })
    if (response.statusCode !== 200) return failed(`status ${response.statusCode}: ${(await response.body.text()).slice(0, 300)}`)
    let pending = ''
    for await (const chunk of response.body) {
      pending += (chunk as Buffer).toString('utf8')
      const lines = pending.split('\n')
      pending = lines.pop()!
      for (const line of lines) {
        if (!line.startsWith('data: ')) continue
        const data = line.slice(6).trim()
        if (data === '[DONE]') { done = true; continue }
        const event = JSON.parse(data) as Event
        if (event.error !== undefined) return failed(`error event: ${JSON.stringify(event.error).slice(0, 300)}`)
        const delta = event.choices?.[0]?.delta
        // A thinking model's first tokens are its reasoning: its first token all the same.
        for (const piece of [delta?.reasoning_content, delta?.content]) {
          if (typeof piece !== 'string' || piece === '') continue
          if (firstAt < 0) firstAt = now()
          text += piece
        }
        if (event.usage) usage = event.usage
        if (typeof event.timings?.prompt_n === 'number') promptN = event.timings.prompt_n
      }
    }
  } catch (err) {
    return failed((err as Error).message)
  }
  if (!done) return failed('the stream ended without [DONE]')
  if (firstAt < 0) return failed('no text in the answer')
  const promptTokens = usage.prompt_tokens ?? 0
  const cachedTokens = usage.prompt_tokens_details?.cached_tokens ?? 0
  return { ok: true, firstAt, endAt: now(), text, promptTokens, cachedTokens, evaluatedTokens: promptN ?? promptTokens - cachedTokens }
}
