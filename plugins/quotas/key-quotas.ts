import { TooManyRequestsError } from '../../core/errors.js'
import type { KeyLimits } from '../../core/keys-file.js'

const MINUTE_MS = 60_000
const DAY_MS = 86_400_000

/** The key a request showed, as far as its limits go (plugins/security's Grant). */
export interface LimitedKey {
  readonly name: string
  readonly limits: Readonly<KeyLimits>
}

/**
 * The limits of each API key at the door (the keys file's `limits`): requests in flight (`concurrent`), requests
 * admitted in the last 60 s (`requests_per_minute`, a sliding window) and tokens used since 00:00 UTC
 * (`tokens_per_day`, from the usage book). Counted by key name, so that a reloaded keys file keeps the counts. The
 * queue share is the scheduler's to apply: it sees the lines.
 */
export class KeyQuotas {
  private readonly running = new Map<string, number>()
  /** The admission times (ms) of each key's requests in the last minute, oldest first. */
  private readonly recent = new Map<string, number[]>()

  constructor (private readonly deps: {
    /** Prompt plus generated tokens the key used since 00:00 UTC (the usage plugin's book). */
    tokensToday: (key: string) => number
    /** @default Date.now */
    now?: () => number
  }) {}

  /**
   * Lets a request of `key` in, or says which limit it is past. The returned function ends it (call it once, when
   * its answer is over). @throws TooManyRequestsError naming the key and the limit, with the wait in Retry-After
   */
  admit (key: LimitedKey): () => void {
    const now = this.deps.now?.() ?? Date.now()
    const { name, limits } = key
    // The longest wait first: a key out of tokens hears of the day, not of a minute that would only refuse it again.
    if (limits.tokens_per_day !== undefined) {
      const used = this.deps.tokensToday(name)
      if (used >= limits.tokens_per_day) {
        throw new TooManyRequestsError(`the API key "${name}" used ${used} tokens today (UTC), reaching its limit of ${limits.tokens_per_day} ` +
          '(limits.tokens_per_day in the keys file); retry after 00:00 UTC', (nextUtcMidnight(now) - now) / 1000, { tokensPerDay: limits.tokens_per_day })
      }
    }
    const times = this.recentOf(name, now)
    if (limits.requests_per_minute !== undefined && times.length >= limits.requests_per_minute) {
      // Once the oldest of the window's requests is a minute old, one more fits.
      const waitMs = times[times.length - limits.requests_per_minute]! + MINUTE_MS - now
      throw new TooManyRequestsError(`the API key "${name}" made ${times.length} requests in the last minute, at its limit of ${limits.requests_per_minute} ` +
        `(limits.requests_per_minute in the keys file); retry in ${Math.max(1, Math.ceil(waitMs / 1000))} s`, waitMs / 1000, { limit: limits.requests_per_minute })
    }
    const inFlight = this.running.get(name) ?? 0
    if (limits.concurrent !== undefined && inFlight >= limits.concurrent) {
      // How long a request runs is anyone's guess: a second is a fair first try.
      throw new TooManyRequestsError(`the API key "${name}" has ${inFlight} request${inFlight === 1 ? '' : 's'} running, at its limit of ${limits.concurrent} ` +
        '(limits.concurrent in the keys file); retry when one ends', 1, { limit: limits.concurrent })
    }
    // Only a key with a window keeps one: a key added a limit by a reload starts with an empty window.
    if (limits.requests_per_minute !== undefined) {
      times.push(now)
      this.recent.set(name, times)
    }
    this.running.set(name, inFlight + 1)
    let ended = false
    return () => {
      if (ended) return
      ended = true
      const left = (this.running.get(name) ?? 1) - 1
      if (left > 0) this.running.set(name, left)
      else this.running.delete(name)
    }
  }

  /** The key's admissions within the last minute; older ones are forgotten here. */
  private recentOf (name: string, now: number): number[] {
    const times = this.recent.get(name) ?? []
    let old = 0
    while (old < times.length && times[old]! <= now - MINUTE_MS) old++
    if (old > 0) times.splice(0, old)
    if (times.length === 0) this.recent.delete(name)
    return times
  }
}

/** The next 00:00 UTC after `now` (ms since epoch), when a day's tokens start again. */
export function nextUtcMidnight (now: number): number {
  return (Math.floor(now / DAY_MS) + 1) * DAY_MS
}
