import { Pool } from 'undici'
import { percentile } from '../stats.js'

/** One streamed chat completion as a client sees it. */
export interface StreamResult { ttftMs: number, totalMs: number, tokens: number, ok: boolean, error?: string, retried?: boolean }

const CONTENT = /"content":"[^"]/

/**
 * Sends one streamed /v1/chat/completions request and times it: time to the first content fragment, total
 * time, and the completion tokens the server reports (stream_options.include_usage).
 */
export async function streamOnce (pool: Pool, model: string, maxTokens: number, seed: number): Promise<StreamResult> {
  // A pooled connection the server closed just before reuse fails before any byte: what a careful client
  // does is send again, and every setup gets the same courtesy.
  const first = await streamAttempt(pool, model, maxTokens, seed)
  if (first.ok || first.ttftMs >= 0 || !/other side closed|ECONNRESET|socket/i.test(first.error ?? '')) return first
  const again = await streamAttempt(pool, model, maxTokens, seed)
  return { ...again, totalMs: again.totalMs + first.totalMs, ttftMs: again.ttftMs < 0 ? -1 : again.ttftMs + first.totalMs, retried: true }
}

async function streamAttempt (pool: Pool, model: string, maxTokens: number, seed: number): Promise<StreamResult> {
  const started = performance.now()
  let ttftMs = -1
  let tail = ''
  try {
    const { statusCode, body } = await pool.request({
      method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model, stream: true, stream_options: { include_usage: true }, max_tokens: maxTokens, seed, temperature: 0.8, ignore_eos: true,
        messages: [{ role: 'user', content: 'Write a long story about a lighthouse keeper.' }],
      }),
    })
    if (statusCode !== 200) return { ttftMs: -1, totalMs: performance.now() - started, tokens: 0, ok: false, error: `status ${statusCode}: ${await body.text()}` }
    for await (const chunk of body) {
      const text = (chunk as Buffer).toString('utf8')
      if (ttftMs < 0 && CONTENT.test(text)) ttftMs = performance.now() - started
      tail = (tail + text).slice(-2000)
    }
    const usage = /"completion_tokens":(\d+)/.exec(tail)
    return { ttftMs, totalMs: performance.now() - started, tokens: usage ? Number(usage[1]) : 0, ok: tail.includes('[DONE]') }
  } catch (err) {
    return { ttftMs, totalMs: performance.now() - started, tokens: 0, ok: false, error: (err as Error).message }
  }
}

export interface LoadResult {
  concurrency: number
  requests: number
  failed: number
  /** Requests sent twice because the server had closed the pooled connection. */
  retried: number
  wallMs: number
  aggregateTps: number
  perStreamTps: number
  ttftP50: number
  ttftP99: number
}

/** `concurrency` clients, each sending `rounds` requests back to back. */
export async function runLoad (baseUrl: string, model: string, concurrency: number, rounds: number, maxTokens: number): Promise<LoadResult> {
  const pool = new Pool(baseUrl, { connections: concurrency })
  const results: StreamResult[] = []
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async (_, client) => {
    for (let round = 0; round < rounds; round++) results.push(await streamOnce(pool, model, maxTokens, 1000 + client * 31 + round))
  }))
  const wallMs = performance.now() - started
  await pool.close()
  const good = results.filter((r) => r.ok)
  const tokens = good.reduce((sum, r) => sum + r.tokens, 0)
  const perStream = good.map((r) => r.tokens / ((r.totalMs - r.ttftMs) / 1000))
  const failures = results.filter((r) => !r.ok)
  if (failures.length > 0) process.stderr.write(`  ${failures.length} failed, e.g. ${failures[0]!.error}\n`)
  return {
    concurrency,
    requests: results.length,
    failed: failures.length,
    retried: results.filter((r) => r.retried).length,
    wallMs,
    aggregateTps: tokens / (wallMs / 1000),
    perStreamTps: percentile(perStream, 50),
    ttftP50: percentile(good.map((r) => r.ttftMs), 50),
    ttftP99: percentile(good.map((r) => r.ttftMs), 99),
  }
}
