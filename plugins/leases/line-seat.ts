import type { Priority } from '../../core/base/priority.js'
import type { RequestUsage } from '../../core/base/request-usage.js'

/** A place granted on a line: one of the backend's own, or (handed on early) one in the backend's own queue first. */
export interface Seat {
  /** Resolves once it holds one of the backend's places: at once, or, handed on early, when one frees for it. */
  readonly seated: Promise<void>
  /**
   * A background request's: aborted (with a PreemptedError) when a request of a higher class needs its place; its
   * work stops and it leaves, and the place goes to that request. Absent for the other classes, and for a
   * background request seated by the floor.
   */
  readonly preempted?: AbortSignal
  /** Whether it still waits in the backend's own queue (handed on early, not seated yet). */
  readonly early: boolean
  /**
   * Its answer began at the backend (its head came back, or the call ended): the backend took it out of its own queue.
   * On a line with early places, nothing more is handed on early until every seat granted has begun. Once; also
   * resolves `seated`.
   */
  begun(): void
  /** Gives the place back (once; later calls do nothing): the next in turn takes it. */
  leave(): void
}

/** What a request brings to a line: its key's usage record (the key, its rules), its client's signal, its ticket. */
export interface LineRequest {
  signal?: AbortSignal
  usage?: RequestUsage
  /** Lets `positionOf` find it while it waits. */
  ticket?: object
  /** It may be handed on early, to wait in the backend's own queue (a line with early places). @default false */
  early?: boolean
  /** Its class (core/base/priority.ts): higher classes go first; background work gives its place back. @default 'interactive' */
  priority?: Priority
}

/** How a line is described to a key's rule (the quotas' queue share): its model, its length, one request's time. */
export interface LineTerms {
  model: string
  /** limits.queue_length: the most requests waiting. */
  queueLength: number
  /** About how long one request holds a place (ms): what a refusal says to wait. */
  oneRequestMs(): number
}

