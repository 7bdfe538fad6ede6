import { QueueFullError } from '../../core/errors.js'
import type { RequestUsage } from '../../core/request-usage.js'

/** A queued request: resolved with true when a place is handed to it, false when the line was dismissed. */
interface Waiter { grant: (granted: boolean) => void, ticket?: object, key: string, arrived: number }

/** The line of requests without an API key (keys off, a preload): one key among the others, in arrival order. */
const NO_KEY = ''

/** What a request brings to a line: its key's usage record (the key, its rules), its client's signal, its ticket. */
export interface LineRequest {
  signal?: AbortSignal
  usage?: RequestUsage
  /** Lets `positionOf` find it while it waits. */
  ticket?: object
}

/** How a line is described to a key's rule (the quotas' queue share): its model, its length, one request's time. */
export interface LineTerms {
  model: string
  /** limits.queue_length: the most requests waiting. */
  queueLength: number
  /** About how long one request holds a place (ms): what a refusal says to wait. */
  oneRequestMs(): number
}

/**
 * Places on a backend (a local instance's slots, an upstream's max_concurrent) and the requests waiting for one: the
 * one per-key line every lease source shares, so that every admission rule is written once. The line is one queue per
 * API key, served in turns: a freed place goes to the first in line of the key served least recently, so a key
 * flooding the line delays another key's request by one turn, not by its whole backlog. Without keys every request is
 * in one queue: first come, first served.
 */
export class KeyLine {
  private inFlight = 0
  /** Waiting requests, one queue per key (in arrival order), and how many in all. */
  private readonly lines = new Map<string, Waiter[]>()
  private waiting = 0
  /** When each key was last handed a place (a count of grants, not a time: no two are equal). */
  private readonly lastGrant = new Map<string, number>()
  private grants = 0
  private arrivals = 0

  /** `places`: how many requests it holds at once (at least one). */
  constructor (readonly places: number) {}

  /** Requests holding a place. */
  get active (): number { return this.inFlight }
  /** Requests waiting in line. */
  get queued (): number { return this.waiting }
  /** Requests of API key `key` waiting in line (those without a key with `key` undefined). */
  queuedOf (key: string | undefined): number { return this.lines.get(key ?? NO_KEY)?.length ?? 0 }
  get idle (): boolean { return this.inFlight === 0 && this.waiting === 0 }

  /** Takes a place at once if one is free and nobody is ahead in line. */
  tryTake (): boolean {
    if (this.inFlight < this.places && this.waiting === 0) {
      this.inFlight++
      return true
    }
    return false
  }

  /**
   * A place for `request`: at once if one is free, else in its key's queue, once the line's rules let it in: the line
   * is not full (limits.queue_length), and its key's own rule (the quotas' queue share, on its usage record) agrees.
   * Resolves false when the line is dismissed first. @throws QueueFullError, the key rule's TooManyRequestsError,
   * the signal's reason
   */
  async take (terms: LineTerms, request: LineRequest): Promise<boolean> {
    request.signal?.throwIfAborted()
    if (this.tryTake()) return true
    if (this.waiting >= terms.queueLength) throw new QueueFullError(terms.model)
    request.usage?.mayQueue?.({ ...terms, waitingOf: (key) => this.queuedOf(key) })
    return this.enqueue(request.signal, request.ticket, request.usage?.key)
  }

  /**
   * Where the request holding `ticket` is in line: 1 is next; 0 when it is not in line. The turns as they stand:
   * the grants before it, were no other request to come (a key arriving later may still take a turn before it).
   */
  positionOf (ticket: object): number {
    const order = this.turnOrder()
    for (const [rank, key] of order.entries()) {
      const at = this.lines.get(key)!.findIndex((w) => w.ticket === ticket)
      if (at === -1) continue
      // Each key ahead in this round, and every key's turns in the rounds before, come first.
      let before = 0
      for (const [r, other] of order.entries()) before += Math.min(this.lines.get(other)!.length, r < rank ? at + 1 : at)
      return before + 1
    }
    return 0
  }

  /**
   * Waits in line, in the queue of API key `key` (undefined: the queue of requests without one), with no rule
   * applied; `ticket` lets positionOf find it. Resolves false when the line is dismissed first.
   */
  enqueue (signal?: AbortSignal, ticket?: object, key?: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = (): void => {
        this.remove(waiter)
        reject(signal!.reason)
      }
      const waiter: Waiter = {
        grant: (granted) => { signal?.removeEventListener('abort', onAbort); resolve(granted) },
        ticket,
        key: key ?? NO_KEY,
        arrived: this.arrivals++,
      }
      const line = this.lines.get(waiter.key)
      if (line) line.push(waiter)
      else this.lines.set(waiter.key, [waiter])
      this.waiting++
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** A request gave its place back: it goes to the next in turn (the count stays, so nobody slips in), or is freed. */
  handOver (): void {
    const key = this.turnOrder()[0]
    if (key === undefined) { this.inFlight--; return }
    const next = this.lines.get(key)![0]!
    this.remove(next)
    this.lastGrant.set(key, this.grants++)
    next.grant(true)
  }

  /** Sends everyone in line away: each hears false (they look for another place, or say why there is none). */
  dismiss (): void {
    const all = [...this.lines.values()].flat()
    this.lines.clear()
    this.waiting = 0
    for (const waiter of all) waiter.grant(false)
  }

  /**
   * The keys with requests in line, in the order their turns come: the one served least recently first (one never
   * served here before any that was, then by who has waited longest). Each key served goes last, so the order
   * repeats round after round.
   */
  private turnOrder (): string[] {
    const since = (key: string): number => this.lastGrant.get(key) ?? -1
    return [...this.lines.keys()].sort((a, b) => since(a) - since(b) || this.lines.get(a)![0]!.arrived - this.lines.get(b)![0]!.arrived)
  }

  private remove (waiter: Waiter): void {
    const line = this.lines.get(waiter.key)
    const at = line?.indexOf(waiter) ?? -1
    if (at === -1) return
    line!.splice(at, 1)
    if (line!.length === 0) this.lines.delete(waiter.key)
    this.waiting--
  }
}
