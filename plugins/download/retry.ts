import { setTimeout as sleep } from 'node:timers/promises'

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504])
/** Attempts in all, as huggingface_hub: waits of 1, 2, 4, 8, 8 s between them. */
export const MAX_ATTEMPTS = 6

export function isRetryableStatus (status: number): boolean { return RETRY_STATUS.has(status) }

/**
 * How long to wait before the next try: the hub's `RateLimit` reset (when nothing remains), else
 * `Retry-After` seconds, else exponential backoff capped at 8 s.
 */
export function retryDelayMs (attempt: number, headers?: { get(name: string): string | null }): number {
  const rateLimit = headers?.get('ratelimit')
  const match = rateLimit ? /r\s*=\s*(\d+)\s*;\s*t\s*=\s*(\d+)/.exec(rateLimit) : null
  if (match && Number(match[1]) === 0) return (Number(match[2]) + 1) * 1000
  const retryAfter = headers?.get('retry-after')
  if (retryAfter && /^\d+$/.test(retryAfter)) return (Number(retryAfter) + 1) * 1000
  return Math.min(1000 * 2 ** (attempt - 1), 8000)
}

export async function wait (ms: number, signal?: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal })
}
