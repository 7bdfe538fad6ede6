import { QueueFullError } from '../../core/base/errors.js'
import { priorityRank, type Priority } from '../../core/base/priority.js'
import type { LineRequest, LineTerms, Seat } from './line-seat.js'
import { PreemptedError } from './preempted.js'

export type { LineRequest, LineTerms, Seat }

/** A queued request: resolved with its seat when a place is handed to it, null when the line was dismissed. */
interface Waiter { grant: (seat: Seat | null) => void, ticket?: object, key: string, priority: Priority, arrived: number, early: boolean }

/** A seated background request: cut (`preempt`) when a request of a higher class finds no free place. */
interface BackgroundSeat { cut: AbortController, kept: boolean }

/**
 * Of the places handed over while background work waits behind others, at least one in this many goes to it, and is
 * not taken back: under a steady load of people, background work still moves.
 */
export const BACKGROUND_FLOOR = 10

/**
 * On a backend of several places, background work leaves half (one of two) to people while they asked for one within
 * this long: their next request finds one free rather than taking one back, and the runtime's steps, which all its
 * requests share, carry less background work beside theirs. Only the first after a quiet spell waits for a hand-back.
 */
export const PEOPLE_HOLD_MS = 10_000

/** The line of requests without an API key (keys off, a preload): one key among the others, in arrival order. */
const NO_KEY = ''

/**
 * Places on a backend (a local instance's slots, an upstream's max_concurrent) and the requests waiting for one: the
 * one per-key line every lease source shares, so that every admission rule is written once. The line is one queue per
 * API key, served in turns: a freed place goes to the first in line of the key served least recently, so a key
 * flooding the line delays another key's request by one turn, not by its whole backlog. Without keys every request is
 * in one queue: first come, first served.
 *
 * A backend with a queue of its own (llama-server's) may also get `early` requests more than its places, in turn as
 * any grant: they wait in its queue and start the moment a place frees there, where one sent only then would leave the
 * place idle for a round trip through the gateway. Such a request holds its seat from then on (`takeSeat`); it counts
 * as waiting (`queued`) until it is seated, oldest first, when a place is given back. They go one at a time: the next
 * only once every request granted before it has begun (`Seat.begun`), since a backend takes two requests sent a moment
 * apart in the order it happens to read them, and its queue would not keep the line's order.
 *
 * Requests come in classes (core/base/priority.ts): a higher class is served before a lower one, the keys' turns
 * within each. Background work takes free places only: it is never handed on early, and a request of a higher class
 * that finds every place taken takes back the one a background request seated last holds (`Seat.preempted`): it waits
 * for that one place's hand-back, not for a whole generation. Of the places handed over while background work waits
 * behind others, one in BACKGROUND_FLOOR goes to it and is kept.
 */
export class KeyLine {
  /** Requests holding one of the backend's places (seated). */
  private inFlight = 0
  /** Requests handed on early, not seated yet, in the order they went (the backend's queue is first come, first served). */
  private readonly handedOn: Array<{ seat: () => void, key: string, ticket?: object }> = []
  /** Seated background requests, in the order they were seated. */
  private readonly background: BackgroundSeat[] = []
  /** Background seats cut and not given back yet: each is a place already promised to a waiting request. */
  private preempting = 0
  /** Places handed over while background work waited behind others, since one last went to it (the floor). */
  private passedBackground = 0
  /** When a request above background last asked for a place (ms since epoch; 0: never). */
  private lastPerson = 0
  /** Set while background work waits for the hold on people's places to pass. */
  private holdTimer: NodeJS.Timeout | null = null
  /** Seats granted (on a line with early places) whose answer has not begun yet: one handed on early could pass them. */
  private unbegun = 0
  /** Waiting requests, one queue per class and key (in arrival order; `lineId`), and how many in all. */
  private readonly lines = new Map<string, Waiter[]>()
  private waiting = 0
  /** When each key was last handed a place (a count of grants, not a time: no two are equal). */
  private readonly lastGrant = new Map<string, number>()
  private grants = 0
  private arrivals = 0

  /**
   * `places`: how many requests it holds at once (at least one); `early`: how many more may be handed on to wait in
   * its own queue (a line with any is used through `takeSeat` and its seats); `peopleHoldMs`: how long half the places
   * stay held for people after one asked. @default early 0, peopleHoldMs PEOPLE_HOLD_MS
   */
  constructor (readonly places: number, readonly early = 0, private readonly peopleHoldMs = PEOPLE_HOLD_MS) {}

  /** Requests holding a place. */
  get active (): number { return this.inFlight }
  /** Requests waiting: in line, and handed on early but not seated yet. */
  get queued (): number { return this.waiting + this.handedOn.length }
  /** Requests of API key `key` waiting, in line or handed on early (those without a key with `key` undefined). */
  queuedOf (key: string | undefined): number {
    const of = key ?? NO_KEY
    let waiting = 0
    for (const line of this.lines.values()) if (line[0]!.key === of) waiting += line.length
    return waiting + this.handedOn.filter((h) => h.key === of).length
  }
  get idle (): boolean { return this.inFlight === 0 && this.queued === 0 }
  /** Whether it holds requests and every one, seated or waiting, is background work. */
  get onlyBackground (): boolean {
    return this.inFlight > 0 && this.background.length === this.inFlight && this.handedOn.length === 0 && this.waitingFrom('interactive') === 0
  }

  /** Cuts every background request seated here but the floor's: a person waits for the room it holds, for another model. */
  cutBackground (): void {
    for (const b of this.background.filter((b) => !b.kept && !b.cut.signal.aborted)) { this.preempting++; b.cut.abort(new PreemptedError()) }
  }

  /** Takes a place at once if one is free and nobody of its class or a higher one is ahead in line. */
  tryTake (priority: Priority = 'interactive'): boolean {
    const room = priority === 'background' && this.peopleHold() ? Math.floor(this.places / 2) : this.places
    if (this.inFlight < room && this.handedOn.length === 0 && this.waitingFrom(priority) === 0) {
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
    return await this.takeSeat(terms, request) !== null
  }

  /**
   * `take`, with the seat it got: one of the backend's places, or one of its early ones. Null when the line is
   * dismissed first. @throws as take
   */
  async takeSeat (terms: LineTerms, request: LineRequest): Promise<Seat | null> {
    request.signal?.throwIfAborted()
    const key = request.usage?.key ?? NO_KEY
    const priority = request.priority ?? 'interactive'
    if (priority !== 'background') this.lastPerson = Date.now()
    // A place taken at once is the key's turn as much as one handed over: after an idle spell the key served last
    // goes after the others.
    if (this.tryTake(priority)) return this.seat(this.served(key), false, undefined, priority)
    const early = request.early === true && priority !== 'background'
    if (early && this.waitingFrom(priority) === 0 && this.mayHandOn()) {
      const seat = this.seat(key, true, request.ticket)
      this.preemptFor()
      return seat
    }
    // Those handed on early wait too: the line's length and a key's share count them.
    if (this.queued >= terms.queueLength) throw new QueueFullError(terms.model)
    request.usage?.mayQueue?.({ ...terms, waitingOf: (of) => this.queuedOf(of) })
    const waiting = this.wait(request.signal, request.ticket, request.usage?.key, early, priority)
    this.preemptFor()
    return waiting
  }

  /**
   * Where the request holding `ticket` is in line: 1 is next; 0 when it is not in line. The turns as they stand:
   * the grants before it, were no other request to come (a key arriving later may still take a turn before it).
   */
  positionOf (ticket: object): number {
    // Those handed on early are seated first, in the order they went.
    const early = this.handedOn.findIndex((h) => h.ticket === ticket)
    if (early !== -1) return early + 1
    const order = this.turnOrder()
    for (const [rank, id] of order.entries()) {
      const line = this.lines.get(id)!
      const at = line.findIndex((w) => w.ticket === ticket)
      if (at === -1) continue
      // Every request of a higher class comes first; within its own, each key ahead in this round, and every key's
      // turns in the rounds before.
      const priority = line[0]!.priority
      let before = 0
      for (const [r, other] of order.entries()) {
        const them = this.lines.get(other)!
        if (them[0]!.priority !== priority) before += priorityRank(them[0]!.priority) > priorityRank(priority) ? them.length : 0
        else before += Math.min(them.length, r < rank ? at + 1 : at)
      }
      return this.handedOn.length + before + 1
    }
    return 0
  }

  /**
   * Waits in line, in the queue of API key `key` (undefined: the queue of requests without one), with no rule
   * applied; `ticket` lets positionOf find it. Resolves false when the line is dismissed first.
   */
  enqueue (signal?: AbortSignal, ticket?: object, key?: string, priority: Priority = 'interactive'): Promise<boolean> {
    const waiting = this.wait(signal, ticket, key, false, priority).then((seat) => seat !== null)
    this.preemptFor()
    return waiting
  }

  /** A seated holder gave its place back (one taken by `take`, `tryTake` or `enqueue`): `Seat.leave` for a seat's. */
  handOver (): void {
    // The backend starts the oldest request in its own queue; otherwise the next in turn takes the place (the count
    // stays: nobody slips in), or it is freed.
    const oldest = this.handedOn.shift()
    if (oldest !== undefined) {
      oldest.seat()
    } else if (this.firstInTurn()?.priority === 'background' && this.peopleHold()) {
      // People's places are held a while: background work takes them once the hold has passed.
      this.inFlight--
      this.wakeAfterHold()
    } else {
      const next = this.nextInTurn()
      if (next === null) this.inFlight--
      else next.grant(this.seat(next.key, false, next.ticket, next.priority, next.kept))
    }
    this.handOn()
  }

  /** Sends everyone in line away: each hears false (they look for another place, or say why there is none). */
  dismiss (): void {
    const all = [...this.lines.values()].flat()
    this.lines.clear()
    this.waiting = 0
    for (const waiter of all) waiter.grant(null)
  }

  private wait (signal?: AbortSignal, ticket?: object, key?: string, early = false, priority: Priority = 'interactive'): Promise<Seat | null> {
    return new Promise<Seat | null>((resolve, reject) => {
      const onAbort = (): void => {
        this.remove(waiter)
        reject(signal!.reason)
      }
      const waiter: Waiter = {
        grant: (seat) => { signal?.removeEventListener('abort', onAbort); resolve(seat) },
        ticket,
        key: key ?? NO_KEY,
        priority,
        arrived: this.arrivals++,
        early,
      }
      const id = lineId(waiter)
      const line = this.lines.get(id)
      if (line) line.push(waiter)
      else this.lines.set(id, [waiter])
      this.waiting++
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /**
   * Early places free: the next in turn are handed on while any waits and may be; one that may not keeps its turn, and
   * the places stay free until one of the backend's own frees for it (nobody passes it).
   */
  private handOn (): void {
    if (!this.mayHandOn()) return
    const next = this.nextInTurn(true)
    if (next !== null) next.grant(this.seat(next.key, true, next.ticket))
  }

  /** An early place is free, and every request granted before has begun at the backend (nothing it could pass). */
  private mayHandOn (): boolean {
    return this.handedOn.length < this.early && this.unbegun === 0
  }

  /**
   * The first in line of the key whose turn it is, out of the line and counted as served; null when nobody waits (or,
   * `early`, when that one may not be handed on early).
   */
  private nextInTurn (early = false): (Waiter & { kept?: boolean }) | null {
    const order = this.turnOrder()
    let id = order[0]
    if (id === undefined) return null
    // The floor: background work waiting behind others gets one place in BACKGROUND_FLOOR handed over (never early).
    let kept = false
    const background = order.find((other) => this.lines.get(other)![0]!.priority === 'background')
    if (!early && background !== undefined && background !== id) {
      if (++this.passedBackground >= BACKGROUND_FLOOR) { id = background; kept = true }
    }
    if (!early && (kept || id === background)) this.passedBackground = 0
    const next = this.lines.get(id)![0]!
    if (early && !next.early) return null
    this.remove(next)
    this.served(next.key)
    return kept ? { ...next, kept } : next
  }

  /** Whether background work is held to half the places now: people asked for one within PEOPLE_HOLD_MS (more than one place). */
  private peopleHold (): boolean {
    return this.places > 1 && this.inFlight >= Math.floor(this.places / 2) && Date.now() - this.lastPerson < this.peopleHoldMs
  }

  /** The first in line of the key whose turn it is, left in line. */
  private firstInTurn (): Waiter | undefined {
    const id = this.turnOrder()[0]
    return id === undefined ? undefined : this.lines.get(id)![0]
  }

  /** Once the hold has passed, free places go to the background work waiting for them. */
  private wakeAfterHold (): void {
    if (this.holdTimer !== null) return
    this.holdTimer = setTimeout(() => {
      this.holdTimer = null
      while (this.inFlight < this.places && this.handedOn.length === 0 && this.firstInTurn() !== undefined) {
        if (this.firstInTurn()!.priority === 'background' && this.peopleHold()) { this.wakeAfterHold(); return }
        this.inFlight++
        const next = this.nextInTurn()!
        next.grant(this.seat(next.key, false, next.ticket, next.priority, next.kept))
      }
    }, Math.max(1, this.lastPerson + this.peopleHoldMs - Date.now()))
    this.holdTimer.unref()
  }

  /** Requests waiting in line at `priority` or above. */
  private waitingFrom (priority: Priority): number {
    let count = 0
    for (const line of this.lines.values()) if (priorityRank(line[0]!.priority) >= priorityRank(priority)) count += line.length
    return count
  }

  /**
   * Requests above background wait (in line or handed on early) for more places than background seats already cut
   * will give back: the background request seated last (not one the floor seated) is cut, and gives its place back.
   */
  private preemptFor (): void {
    const waiting = this.waitingFrom('interactive') + this.handedOn.length
    if (waiting <= this.preempting) return
    const victim = [...this.background].reverse().find((b) => !b.kept && !b.cut.signal.aborted)
    if (victim === undefined) return
    this.preempting++
    victim.cut.abort(new PreemptedError())
  }

  /** Counts a turn for `key`, now; returns it. */
  private served (key: string): string {
    this.lastGrant.set(key, this.grants++)
    return key
  }

  /**
   * A seat on a place taken now, or (`early`) handed on to the backend's queue, seated when a place frees for it. A
   * background one may be cut for a request of a higher class, unless the floor seated it (`kept`).
   */
  private seat (key: string, early: boolean, ticket?: object, priority: Priority = 'interactive', kept = false): Seat {
    let state: 'early' | 'seated' | 'left' = early ? 'early' : 'seated'
    const background: BackgroundSeat | null = priority === 'background' ? { cut: new AbortController(), kept } : null
    if (background !== null) this.background.push(background)
    let seatedNow = (): void => {}
    const seated = early ? new Promise<void>((resolve) => { seatedNow = resolve }) : Promise.resolve()
    const holder = { key, ticket, seat: () => { state = 'seated'; seatedNow() } }
    if (early) this.handedOn.push(holder)
    // A line without early places hands nothing on: what has begun does not matter there.
    let begun = this.early === 0
    if (!begun) this.unbegun++
    const begin = (): boolean => {
      if (begun) return false
      begun = true
      this.unbegun--
      return true
    }
    return {
      seated,
      ...(background !== null && !kept ? { preempted: background.cut.signal } : {}),
      get early () { return state === 'early' },
      begun: () => {
        // Begun, it holds one of the backend's places, whether or not the line has seated it yet.
        seatedNow()
        if (begin() && state !== 'left') this.handOn()
      },
      leave: () => {
        if (state === 'left') return
        if (background !== null) {
          this.background.splice(this.background.indexOf(background), 1)
          if (background.cut.signal.aborted) this.preempting--
        }
        begin()
        if (state === 'seated') this.handOver()
        else if (state === 'early') {
          // Gone before a place freed for it: its early place goes to the next in turn.
          this.handedOn.splice(this.handedOn.indexOf(holder), 1)
          this.handOn()
        }
        state = 'left'
      },
    }
  }

  /**
   * The keys with requests in line, in the order their turns come: the one served least recently first (one never
   * served here before any that was, then by who has waited longest). Each key served goes last, so the order
   * repeats round after round.
   */
  private turnOrder (): string[] {
    const since = (key: string): number => this.lastGrant.get(key) ?? -1
    const first = (id: string): Waiter => this.lines.get(id)![0]!
    return [...this.lines.keys()].sort((a, b) => priorityRank(first(b).priority) - priorityRank(first(a).priority) ||
      since(first(a).key) - since(first(b).key) || first(a).arrived - first(b).arrived)
  }

  private remove (waiter: Waiter): void {
    const id = lineId(waiter)
    const line = this.lines.get(id)
    const at = line?.indexOf(waiter) ?? -1
    if (at === -1) return
    line!.splice(at, 1)
    if (line!.length === 0) this.lines.delete(id)
    this.waiting--
  }
}

/** A key's queue of one class. */
function lineId (waiter: Pick<Waiter, 'key' | 'priority'>): string {
  return `${waiter.priority}\0${waiter.key}`
}
