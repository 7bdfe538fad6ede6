import { randomUUID } from 'node:crypto'
import type { Test } from 'tap'
import { hostileUpstream, type Attack } from '../../test/plugins/upstreams/hostile-upstream.js'
import type { AttackResult, AttackWorker } from './soak-attack-kinds.js'
import { http } from './soak-probes.js'

// The hostile soak's upstream: a loopback fake in the soak's own process, configured as an upstream of
// kind openai with a key, misbehaving as each request asks (test/plugins/upstreams/hostile-upstream.ts, the tests'
// own). Its attacker, under a key that may use its models only, must get a 502 or an error event for each attack,
// never a byte of the upstream's key, and no impossible count in its usage.

export const UPSTREAM_PREFIX = 'hostile/'
const MODEL = `${UPSTREAM_PREFIX}m`
/** The soak's limits.upstream_*: small, so that an attack costs the gateway little and ends at once. */
export const UPSTREAM_LIMITS = { upstream_answer_size: '1MiB', upstream_error_size: '16KiB', upstream_line_size: '256KiB' }
/** Tokens one of its requests may book at most: a prompt of a few words and a 1 MiB stream's 16 events. */
const TOKENS_A_REQUEST = 64

export interface RunningUpstream { name: string, origin: string, port: number, key: string, close: () => Promise<void> }

/** Starts the fake upstream on 127.0.0.1, with the key the gateway is to send it. */
export async function startHostileUpstream (): Promise<RunningUpstream> {
  const closers: Array<() => unknown> = []
  // The fake was written for tap, whose teardown closes it; the soak closes it itself, at its end.
  const owner = { teardown: (close: () => unknown) => { closers.push(close) } } as unknown as Test
  const upstream = await hostileUpstream(owner)
  return {
    name: 'hostile',
    origin: upstream.origin,
    port: Number(new URL(upstream.origin).port),
    key: `sk-upstream-${randomUUID()}`,
    close: async () => { for (const close of closers) await close() },
  }
}

/** Its entry in config.yaml's upstreams (Messages converted, so that the conversion reads the attacks too). */
export function upstreamConfig (u: RunningUpstream): string {
  return `upstreams:\n  - { name: ${u.name}, url: "${u.origin}", kind: openai, key: "${u.key}", prefix: "${UPSTREAM_PREFIX}", messages: convert }`
}

interface Variant { attack: Attack, path: string, stream: boolean, expect: readonly string[] }

const event = (why: string): string => `200, then an error event: ${why}`
/**
 * Each attack on the surfaces that read it, and the bounded answers docs/operations.md promises: past a size limit a
 * 502 naming it, or a begun stream's last event; a tool call numbered 10^7 or an impossible count, the answer's error;
 * the key cut out wherever it was echoed.
 */
const VARIANTS: readonly Variant[] = [
  { attack: 'tool-index-1e7', path: '/api/chat', stream: true, expect: [event('a tool call numbered 10^7')] },
  { attack: 'tool-index-1e7', path: '/api/chat', stream: false, expect: ['502 a tool call numbered 10^7'] },
  { attack: 'tool-index-1e7', path: '/v1/messages', stream: true, expect: ['502 a tool call numbered 10^7'] },
  { attack: 'answer-200MiB', path: '/v1/chat/completions', stream: true, expect: [event('limits.upstream_answer_size')] },
  { attack: 'answer-200MiB', path: '/v1/chat/completions', stream: false, expect: ['502 limits.upstream_answer_size'] },
  { attack: 'answer-200MiB-declared', path: '/v1/chat/completions', stream: false, expect: ['502 limits.upstream_answer_size'] },
  { attack: 'endless-error', path: '/v1/chat/completions', stream: true, expect: ['502 limits.upstream_error_size'] },
  { attack: 'endless-error', path: '/api/chat', stream: false, expect: ['502 limits.upstream_error_size'] },
  { attack: 'line-48MB', path: '/api/chat', stream: true, expect: [event('limits.upstream_line_size')] },
  // The relay's event rewrite holds an unended event (in pieces), bounded as a line is.
  { attack: 'line-48MB', path: '/v1/chat/completions', stream: true, expect: [event('limits.upstream_line_size')] },
  { attack: 'negative-counts', path: '/v1/chat/completions', stream: false, expect: ['502 an impossible token count'] },
  { attack: 'negative-counts', path: '/api/chat', stream: true, expect: [event('an impossible token count')] },
  { attack: 'huge-counts', path: '/v1/chat/completions', stream: true, expect: [event('an impossible token count')] },
  { attack: 'huge-counts', path: '/api/chat', stream: false, expect: ['502 an impossible token count'] },
  { attack: 'echo-key', path: '/v1/chat/completions', stream: false, expect: ['200, the key cut out'] },
  { attack: 'echo-key', path: '/v1/chat/completions', stream: true, expect: [event('the key cut out')] },
  { attack: 'echo-key', path: '/api/chat', stream: true, expect: [event('the key cut out')] },
]

/** What an answer's words name: the limit, the check, or the key cut out. */
function why (text: string): string {
  const limit = /\(limits\.(upstream_\w+_size)\)/.exec(text)
  if (limit !== null) return `limits.${limit[1]}`
  if (/a tool call numbered 10000000\b/.test(text)) return 'a tool call numbered 10^7'
  if (/an impossible token count/.test(text)) return 'an impossible token count'
  if (text.includes('<redacted>')) return 'the key cut out'
  return `"${text.replace(/\d+/g, 'N').slice(0, 80)}"`
}

/** An error event of an SSE or NDJSON stream (a 200's body): its line, or null. */
function errorEvent (text: string): string | null {
  return text.split('\n').find((line) => /^(data: )?\{"error":/.test(line)) ?? null
}

/** The attacker: the attacks in turn, every byte read looked through for the key; at the end, its usage. */
export function upstreamAttacker (base: string, relayKey: string, upstreamKey: string): AttackWorker {
  let turn = 0
  let sent = 0
  // Its random part: the key's own prefix may be any text's.
  const secret = upstreamKey.slice(-36)
  const result = (variant: string, answer: string, expected: boolean, ms: number): AttackResult[] => [{ kind: 'hostile_upstream', variant, answer, expected, ms }]
  return {
    kind: 'hostile_upstream',
    pauseMs: 250,
    attempt: async () => {
      const v = VARIANTS[turn++ % VARIANTS.length]!
      const variant = `${v.attack} (${v.path}${v.stream ? ', streamed' : ''})`
      const t0 = performance.now()
      sent++
      const res = await http(`${base}${v.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${relayKey}` },
        body: JSON.stringify({ model: MODEL, stream: v.stream, max_tokens: 8, messages: [{ role: 'user', content: v.attack }] }),
        signal: AbortSignal.timeout(60_000),
      })
      const text = await res.text()
      const ms = performance.now() - t0
      if (text.includes(secret)) return result(variant, `${res.status}: the upstream's key reached the client`, false, ms)
      const error = res.status === 200 ? errorEvent(text) : null
      const answer = res.status !== 200 ? `${res.status} ${why(text)}` : error !== null ? event(why(error)) : why(text) === 'the key cut out' ? '200, the key cut out' : '200, nothing wrong seen'
      return result(variant, answer, v.expect.includes(answer), ms)
    },
    // Its own usage: every count whole, none past what its requests could have made (nothing booked from 10^15, or -2,000,000).
    finish: async () => {
      const t0 = performance.now()
      const res = await http(`${base}/api/usage`, { headers: { authorization: `Bearer ${relayKey}` }, signal: AbortSignal.timeout(15_000) })
      const usage = ((await res.json()) as { keys: Array<{ today: { tokens: number }, totals: Record<string, number> }> }).keys[0]
      const ms = performance.now() - t0
      if (res.status !== 200 || usage === undefined) return result('its usage at the end', `GET /api/usage answered ${res.status}`, false, ms)
      const counts = [usage.today.tokens, ...Object.values(usage.totals)]
      const most = sent * TOKENS_A_REQUEST
      const booked = usage.totals.prompt_tokens! + usage.totals.generated_tokens!
      if (!counts.every((n) => Number.isSafeInteger(n) && n >= 0)) return result('its usage at the end', `an impossible count booked: ${JSON.stringify(usage)}`, false, ms)
      if (booked > most || usage.today.tokens > most) return result('its usage at the end', `${booked} tokens booked for ${sent} requests, over ${TOKENS_A_REQUEST} a request`, false, ms)
      return result('its usage at the end', `every count whole, at most ${TOKENS_A_REQUEST} tokens a request`, true, ms)
    },
  }
}
