import type { AttackResult, AttackWorker } from './soak-attack-kinds.js'
import { lines } from './soak-clients.js'
import { http } from './soak-probes.js'

// The hostile soak's quota dodger: a key with a day of tokens that asks for long answers and leaves each
// after a few dozen tokens, now and then several at once, as if a stream it never finished were free. The gateway
// reserves each request's prompt and cap at the door and books a stream cut short with what it sent
// (docs/operations.md, "How tokens_per_day holds"): 200s until the day is spent, then 429s; its usage at the end
// within the day and at least what it read.

/** The dodger's limits.tokens_per_day. */
export const DODGER_TOKENS_PER_DAY = 3000
/** What one request that reached its end may book past the limit: its real prompt past the door's estimate. */
const SLACK_A_REQUEST = 10
const MAX_TOKENS = 2000
/** Every how many attempts it sends several requests at once, and how many. */
const BURST_EVERY = 3
const BURST = 4

interface Read { answer: string, expected: boolean, ms: number, contentEvents: number, admitted: boolean, ended: boolean }

/** The reason words of a 429 past tokens_per_day, told apart; null for any other refusal. */
function dayRefusal (text: string): string | null {
  if (!text.includes('limits.tokens_per_day')) return null
  if (/its running requests hold/.test(text)) return '429 tokens_per_day: its running requests hold the rest'
  if (/reaching its limit/.test(text)) return '429 tokens_per_day: the day spent'
  if (/does not fit/.test(text)) return '429 tokens_per_day: the day\'s rest too small for the prompt'
  return null
}

/**
 * One long streamed answer asked for, left after `leaveAfter` tokens; sent once more when the request failed before
 * any answer on a kept connection the gateway had just closed (HTTP/1.1's keep-alive race: a careful client sends
 * again, as undici does by itself only for idempotent requests).
 */
async function leaveEarly (base: string, key: string, model: string, leaveAfter: number): Promise<Read> {
  const first = await leaveEarlyOnce(base, key, model, leaveAfter)
  return first.answer.startsWith('failed:') && first.raced ? leaveEarlyOnce(base, key, model, leaveAfter) : first
}

/** A request that failed with the socket closed under it before any byte of an answer: nothing was asked yet. */
function closedUnder (err: unknown): boolean {
  const cause = (err as { cause?: { code?: string, message?: string } }).cause
  return cause?.code === 'UND_ERR_SOCKET' || cause?.code === 'ECONNRESET' || /other side closed/.test(cause?.message ?? '')
}

async function leaveEarlyOnce (base: string, key: string, model: string, leaveAfter: number): Promise<Read & { raced?: boolean }> {
  const t0 = performance.now()
  const controller = new AbortController()
  const timeout = setTimeout(() => controller.abort(new Error('no end within 120 s')), 120_000)
  let contentEvents = 0
  const read = (answer: string, expected: boolean, admitted: boolean, ended = false): Read => ({ answer, expected, ms: performance.now() - t0, contentEvents, admitted, ended })
  try {
    const res = await http(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, stream: true, max_tokens: MAX_TOKENS, ignore_eos: true, messages: [{ role: 'user', content: 'Tell me everything, slowly.' }] }),
      signal: controller.signal,
    })
    if (res.status !== 200) {
      const text = await res.text()
      const refusal = res.status === 429 && res.headers.get('retry-after') !== null ? dayRefusal(text) : null
      return refusal !== null ? read(refusal, true, false) : read(`${res.status} ${text.replace(/\d+/g, 'N').slice(0, 100)}`, false, false)
    }
    let finish: string | null = null
    for await (const line of lines(res.body as AsyncIterable<Uint8Array>)) {
      if (!line.startsWith('data: {')) continue
      const event = JSON.parse(line.slice(6)) as { error?: { message?: string }, choices?: Array<{ delta?: { content?: string }, finish_reason?: string | null }> }
      if (event.error !== undefined) return read(`200, then an error event: ${String(event.error.message).replace(/\d+/g, 'N').slice(0, 100)}`, false, true, true)
      const choice = event.choices?.[0]
      if (typeof choice?.delta?.content === 'string' && choice.delta.content !== '') contentEvents++
      finish = choice?.finish_reason ?? finish
      // Gone, as if the rest were free.
      if (contentEvents >= leaveAfter) {
        controller.abort(new Error('left'))
        return read('200, left after 50-100 tokens', true, true)
      }
    }
    // A request let in near the end of the day gets what is left of it, and so ends before the dodger would leave.
    return finish === 'length'
      ? read('200, shortened to what the day had left (finish_reason length)', true, true, true)
      : read(`200, ended before it was left (finish_reason ${finish})`, false, true, true)
  } catch (err) {
    if (controller.signal.aborted && (controller.signal.reason as Error).message === 'left') return read('200, left after 50-100 tokens', true, true)
    const cause = (err as { cause?: { message?: string } }).cause?.message
    return { ...read(`failed: ${(err as Error).message}${cause !== undefined ? ` (${cause})` : ''}`, false, false), raced: contentEvents === 0 && closedUnder(err) }
  } finally {
    clearTimeout(timeout)
  }
}

interface DodgerUsage { today: { tokens: number, reserved: number }, limits: { tokens_per_day?: number }, totals: { requests: number, generated_tokens: number } }

/**
 * The dodger: streams of `max_tokens` 2000 on the long model, each left after 50-100 tokens; every third attempt four
 * at once. Its last step waits for its requests' reservations to go, then reads its own usage.
 */
export function quotaDodger (base: string, key: string, model: string, rand: () => number): AttackWorker {
  let attempts = 0
  let read = 0
  let admitted = 0
  let ended = 0
  const result = (variant: string, r: Pick<Read, 'answer' | 'expected' | 'ms'>): AttackResult => ({ kind: 'quota_dodger', variant, answer: r.answer, expected: r.expected, ms: r.ms })
  const usage = async (): Promise<DodgerUsage | null> => {
    const res = await http(`${base}/api/usage`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(15_000) })
    return res.status === 200 ? ((await res.json()) as { keys: DodgerUsage[] }).keys[0] ?? null : null
  }
  return {
    kind: 'quota_dodger',
    pauseMs: 500,
    attempt: async () => {
      const n = ++attempts % BURST_EVERY === 0 ? BURST : 1
      const reads = await Promise.all(Array.from({ length: n }, () => leaveEarly(base, key, model, 50 + Math.floor(rand() * 51))))
      for (const r of reads) {
        read += r.contentEvents
        if (r.admitted) admitted++
        if (r.ended) ended++
      }
      return reads.map((r) => result(n === 1 ? 'a stream left early' : `${n} streams at once, each left early`, r))
    },
    finish: async () => {
      const t0 = performance.now()
      const variant = 'its usage at the end'
      // A request the dodger left is booked once the gateway has seen it go: its reservation shows until then.
      let u = await usage()
      for (let i = 0; i < 100 && u !== null && u.today.reserved > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        u = await usage()
      }
      const ms = performance.now() - t0
      if (u === null) return [result(variant, { answer: 'GET /api/usage did not answer 200', expected: false, ms })]
      const limit = u.limits.tokens_per_day ?? DODGER_TOKENS_PER_DAY
      const most = limit + SLACK_A_REQUEST * Math.max(1, ended)
      const problems = [
        ...(u.today.reserved > 0 ? [`${u.today.reserved} tokens still reserved 10 s after its last request`] : []),
        ...(u.today.tokens > most ? [`${u.today.tokens} tokens today, past its limit of ${limit} and the slack (${most})`] : []),
        ...(u.totals.generated_tokens < read ? [`${u.totals.generated_tokens} generated tokens booked, fewer than the ${read} it read`] : []),
        ...(u.totals.requests !== admitted ? [`${u.totals.requests} requests booked, ${admitted} let in`] : []),
      ]
      if (problems.length > 0) return [result(variant, { answer: problems.join('; '), expected: false, ms })]
      // The figures go in the variant, so that the answer counts alike from run to run.
      const figures = `today ${u.today.tokens} of ${limit} tokens, ${u.totals.generated_tokens} generated for ${read} read, ${u.totals.requests} requests booked`
      return [result(`${variant}: ${figures}`, { answer: 'within its day, and at least the tokens it read', expected: true, ms })]
    },
  }
}
