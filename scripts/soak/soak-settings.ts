import { parseArgs } from 'node:util'

// What a soak run is asked (its flags) and what follows from it: its warm-up, the pause between faults, the rooms
// and the hostile soak's short limits. The models and sizes every part of the soak shares are here too.

export const CHAT_MODELS = ['soak/alpha', 'soak/beta', 'soak/gamma'] as const
export const NUM_CTX = 512
export const NUM_PARALLEL = 2
const MAX_LOADED = 2
/** The hostile soak's long-context model, whose streams can back up a socket (the others' slots hold 256 tokens). */
export const LONG_MODEL = 'soak/long'
/** The hostile soak's prompt caches: every chat slot worth saving, a budget of a few saves (tiny models' are ~100 KB). */
export const PROMPT_CACHE = { min_tokens: 16, size: '2MiB' }

export interface SoakSettings {
  durationMs: number
  concurrency: number
  /** A request not ended by then is hung. */
  timeoutMs: number
  maxRequests: number
  seed: number
  /** The first quarter of the run, at most two minutes. Its end is measured quiet, like the end. */
  warmupMs: number
  /** Between two faults. */
  pauseMs: number
  hostile: boolean
  maxLoaded: number
  /** The hostile soak's body, stream-stall and header timeouts. */
  hostileLimitMs: number
  /** A round of the idle attacker. */
  idleConnections: number
  out: string | undefined
  keep: boolean
}

/** The soak's settings from its command line (the flags are listed in scripts/soak/soak.ts). */
export function soakSettings (): SoakSettings {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' }, seconds: { type: 'string' }, out: { type: 'string' }, concurrency: { type: 'string', default: '5' },
      'request-timeout': { type: 'string', default: '90' }, seed: { type: 'string', default: '1' }, 'max-requests': { type: 'string', default: '100000' },
      keep: { type: 'boolean', default: false }, hostile: { type: 'boolean', default: false }, 'idle-connections': { type: 'string', default: '200' },
    },
  })
  const durationMs = values.minutes === undefined && values.seconds === undefined
    ? 10 * 60_000
    : (Number(values.minutes ?? 0) * 60 + Number(values.seconds ?? 0)) * 1000
  if (!Number.isFinite(durationMs) || durationMs < 10_000) throw new Error('the soak runs for at least 10 seconds: --minutes N or --seconds N')
  const hostile = values.hostile
  return {
    durationMs,
    concurrency: Number(values.concurrency),
    timeoutMs: Number(values['request-timeout']) * 1000,
    maxRequests: Number(values['max-requests']),
    seed: Number(values.seed),
    warmupMs: Math.min(120_000, Math.round(durationMs / 4)),
    // Faults one after another, a pause between them: every kind at least once, also on a short run.
    pauseMs: Math.min(15_000, Math.max(500, Math.round(durationMs / 40))),
    hostile,
    // Hostile: the long model gets a room of its own, so that the normal clients share two as in the plain soak.
    maxLoaded: hostile ? MAX_LOADED + 1 : MAX_LOADED,
    // Short enough that the slow bodies' and non-readers' cycles turn over many times in a run: 5 s for 10 minutes.
    hostileLimitMs: Math.min(5, Math.max(2, Math.round(durationMs / 120_000))) * 1000,
    idleConnections: Number(values['idle-connections']),
    out: values.out,
    keep: values.keep,
  }
}
