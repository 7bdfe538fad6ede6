import { TooManyRequestsError } from '../../core/base/errors.js'
import type { KeyLimits } from '../security/keys-file.js'

const MINUTE_MS = 60_000
const DAY_MS = 86_400_000

/** The key a request showed, as far as its limits go (plugins/security's Grant). */
export interface LimitedKey {
  readonly name: string
  readonly limits: Readonly<KeyLimits>
}

/** A request let in: end it once its answer is over; `reserve` holds its tokens against the key's day. */
export interface Admission {
  /**
   * Reserves the request's tokens now that its answer's cap is known (max_tokens after every option layer, -1: none;
   * 0 for a request that generates nothing): its prompt's estimate plus that cap, lowered to what the key's day has
   * left. Returns the cap to generate with. Again after a refit: the new reservation replaces the old.
   * @throws TooManyRequestsError when not even the prompt fits in what is left
   */
  reserve(promptTokens: number, maxTokens: number): number
  /** Ends it (once, when its answer is over): its reservation goes, its real usage is booked by then. */
  end(): void
}

/**
 * The limits of each API key at the door (the keys file's `limits`): requests in flight (`concurrent`), requests
 * admitted in the last 60 s (`requests_per_minute`, a sliding window) and tokens used since 00:00 UTC
 * (`tokens_per_day`, from the usage book, plus what the key's running requests reserved: their prompts and the
 * most they may generate). Counted by key name, so that a reloaded keys file keeps the counts. The queue share is
 * the scheduler's to apply: it sees the lines.
 */
export class KeyQuotas {
  private readonly running = new Map<string, number>()
  /** The admission times (ms) of each key's requests in the last minute, oldest first. */
  private readonly recent = new Map<string, number[]>()
  /** Tokens reserved by each key's running requests, one entry per request. */
  private readonly reserved = new Map<string, Map<object, number>>()

  constructor (private readonly deps: {
    /** Prompt plus generated tokens the key used since 00:00 UTC (the usage plugin's book). */
    tokensToday: (key: string) => number
    /** @default Date.now */
    now?: () => number
  }) {}

  /** Tokens the key's running requests hold reserved now. */
  reservedBy (key: string): number {
    let sum = 0
    for (const tokens of this.reserved.get(key)?.values() ?? []) sum += tokens
    return sum
  }

  /**
   * Lets a request of `key` in, or says which limit it is past. @throws TooManyRequestsError naming the key and the
   * limit, with the wait in Retry-After
   */
  admit (key: LimitedKey): Admission {
    const now = this.deps.now?.() ?? Date.now()
    const { name, limits } = key
    // The longest wait first: a key out of tokens hears of the day, not of a minute that would only refuse it again.
    if (limits.tokens_per_day !== undefined) this.checkDay(name, limits.tokens_per_day, now, 0, 0)
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
    const ticket = {}
    let ended = false
    return {
      reserve: (promptTokens, maxTokens) => {
        const day = limits.tokens_per_day
        if (day === undefined || ended) return maxTokens
        const mine = this.reserved.get(name)
        mine?.delete(ticket)
        const left = this.checkDay(name, day, this.deps.now?.() ?? Date.now(), promptTokens, maxTokens === 0 ? 0 : 1)
        const cap = maxTokens < 0 ? left - promptTokens : Math.min(maxTokens, left - promptTokens)
        let book = this.reserved.get(name)
        if (book === undefined) this.reserved.set(name, book = new Map())
        book.set(ticket, promptTokens + cap)
        return cap
      },
      end: () => {
        if (ended) return
        ended = true
        const left = (this.running.get(name) ?? 1) - 1
        if (left > 0) this.running.set(name, left)
        else this.running.delete(name)
        const book = this.reserved.get(name)
        book?.delete(ticket)
        if (book?.size === 0) this.reserved.delete(name)
      },
    }
  }

  /**
   * What is left of the key's day for a request of `promptTokens` that must generate at least `minimum`: the limit
   * less the tokens booked today and those its running requests reserved. @throws TooManyRequestsError when that is
   * not enough: until midnight once the day is used up, else until a running request ends (its reservation goes)
   */
  private checkDay (name: string, limit: number, now: number, promptTokens: number, minimum: number): number {
    const used = this.deps.tokensToday(name)
    const reserved = this.reservedBy(name)
    const left = limit - used - reserved
    if (left > 0 && left >= promptTokens + minimum) return left
    const untilMidnight = (nextUtcMidnight(now) - now) / 1000
    if (used >= limit) {
      throw new TooManyRequestsError(`the API key "${name}" used ${used} tokens today (UTC), reaching its limit of ${limit} ` +
        '(limits.tokens_per_day in the keys file); retry after 00:00 UTC', untilMidnight, { tokensPerDay: limit })
    }
    if (reserved > 0) {
      throw new TooManyRequestsError(`the API key "${name}" used ${used} tokens today (UTC) and its running requests hold ${reserved} more of its limit of ${limit} ` +
        `(limits.tokens_per_day in the keys file), leaving ${Math.max(0, left)}${promptTokens > 0 ? ` for a prompt of about ${promptTokens} tokens` : ''}; retry when one of them ends`, 1, { tokensPerDay: limit })
    }
    throw new TooManyRequestsError(`the API key "${name}" used ${used} tokens today (UTC) of its limit of ${limit} (limits.tokens_per_day in the keys file): ` +
      `this request's prompt, about ${promptTokens} tokens, does not fit in the ${left} left; retry after 00:00 UTC`, untilMidnight, { tokensPerDay: limit })
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
