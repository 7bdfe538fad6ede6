import type { Pool } from 'undici'

/** One streamed /v1/chat/completions answer as a client sees it, with what the server says it reused. */
export interface ChatResult {
  ok: boolean
  error?: string
  /** Request sent → first chunk with text. */
  ttftMs: number
  totalMs: number
  /** The answer: its reasoning (where the server parsed some out) and content, as they came. */
  text: string
  promptTokens: number
  /** Prompt tokens the server took from its cache (usage.prompt_tokens_details.cached_tokens). */
  cachedTokens: number
  completionTokens: number
  /**
   * Each answer token's logprob (the chosen token's, i.e. the top-1 at temperature 0) and, where the request asked for
   * `top_logprobs` ≥ 2, its runner-up's: where the request asked for `logprobs`.
   */
  logprobs: Array<{ top: number, runnerUp?: number }>
  /**
   * The server's own time to evaluate the prompt (llama-server's timings.prompt_ms), -1 if not reported: the
   * client's TTFT less this is what the request cost outside the model, which a proxy adds to.
   */
  promptMs: number
  /** The prompt tokens the server evaluated (llama-server's timings.prompt_n), -1 if not reported. */
  promptEvaluated: number
}

/**
 * Sends a streamed chat completion and reads every event: the answer's text (a conversation's next turn
 * needs it) and the usage the last event carries. For scenarios whose tokens take milliseconds; the
 * throughput scenario's client (bench-load.ts) parses less.
 */
export async function chatStream (pool: Pool, body: Record<string, unknown>): Promise<ChatResult> {
  // llama-server closes its connection after every stream: a pooled one it closed just before reuse fails
  // before any byte, and a careful client sends again (bench-load.ts does the same for every setup).
  const first = await chatAttempt(pool, body)
  if (first.ok || first.ttftMs >= 0 || !/other side closed|ECONNRESET|socket/i.test(first.error ?? '')) return first
  return chatAttempt(pool, body)
}

async function chatAttempt (pool: Pool, body: Record<string, unknown>): Promise<ChatResult> {
  const started = performance.now()
  let ttftMs = -1
  let text = ''
  const logprobs: ChatResult['logprobs'] = []
  let usage: { prompt_tokens?: number, completion_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } = {}
  let promptMs = -1
  let promptEvaluated = -1
  let done = false
  const failed = (error: string): ChatResult => ({ ok: false, error, ttftMs, totalMs: performance.now() - started, text, promptTokens: 0, cachedTokens: 0, completionTokens: 0, logprobs, promptMs, promptEvaluated })
  try {
    const response = await pool.request({
      method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    })
    if (response.statusCode !== 200) return failed(`status ${response.statusCode}: ${(await response.body.text()).slice(0, 500)}`)
    let pending = ''
    for await (const chunk of response.body) {
      pending += (chunk as Buffer).toString('utf8')
      const lines = pending.split('\n')
      pending = lines.pop()!
      for (const line of lines) {
        if (!line.startsWith('data: ')) continue
        const data = line.slice(6).trim()
        if (data === '[DONE]') { done = true; continue }
        const event = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string | null, reasoning_content?: string | null }, logprobs?: { content?: Array<{ logprob: number, top_logprobs?: Array<{ logprob: number }> }> | null } | null }>, usage?: typeof usage, timings?: { prompt_ms?: number, prompt_n?: number }, error?: unknown }
        if (event.error !== undefined) return failed(`error event: ${JSON.stringify(event.error)}`)
        const delta = event.choices?.[0]?.delta
        // A thinking model's first tokens are its reasoning (Qwen3.5's template opens <think> in the prompt):
        // they are its first token all the same.
        for (const piece of [delta?.reasoning_content, delta?.content]) {
          if (typeof piece !== 'string' || piece === '') continue
          if (ttftMs < 0) ttftMs = performance.now() - started
          text += piece
        }
        for (const entry of event.choices?.[0]?.logprobs?.content ?? []) {
          const runnerUp = entry.top_logprobs?.[1]?.logprob
          logprobs.push({ top: entry.logprob, ...(runnerUp !== undefined ? { runnerUp } : {}) })
        }
        if (event.usage) usage = event.usage
        if (typeof event.timings?.prompt_ms === 'number') promptMs = event.timings.prompt_ms
        if (typeof event.timings?.prompt_n === 'number') promptEvaluated = event.timings.prompt_n
      }
    }
  } catch (err) {
    return failed((err as Error).message)
  }
  if (!done) return failed('the stream ended without [DONE]')
  return {
    ok: true, ttftMs, totalMs: performance.now() - started, text,
    promptTokens: usage.prompt_tokens ?? 0, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0, completionTokens: usage.completion_tokens ?? 0, logprobs, promptMs, promptEvaluated,
  }
}

const WORDS = ('the of and to in is that for it with as was on be by at this from have or an are not but which one all were when we ' +
  'there can more if out so what up about into than them some could time these two may then do first any my now such like our over ' +
  'man me even most made after also did many before must through back years where much your way well down should because each just ' +
  'those people how too little state good very make world still own see men work long get here between both life being under never ' +
  'day same another know while last might us great old year off come since against go came right used take three lighthouse keeper ' +
  'storm harbour lamp island ship rope winter letter').split(' ')

/**
 * `count` common English words chosen by a seeded generator: about one token each with a Llama 3 or Qwen
 * vocabulary, so a prompt of n words is about n tokens. The same seed gives the same text in every setup.
 */
export function prose (count: number, seed: number): string {
  let state = seed >>> 0
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    out.push(WORDS[(state >>> 16) % WORDS.length]!) // an LCG's high bits: its low ones repeat soon
    if (i % 17 === 16) out[out.length - 1] += '.'
  }
  return out.join(' ')
}
