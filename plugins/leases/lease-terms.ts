import { createHash } from 'node:crypto'
import { linkedSignal } from '../../core/base/linked-signal.js'
import type { ResolvedOptions } from '../../core/config/request-options.js'
import type { RequestUsage } from '../../core/base/request-usage.js'
import type { ModelEndpoint } from '../../runtimes/index.js'
import type { EventHub } from '../../core/base/event-hub.js'
import type { LeaseEvents } from './lease-events.js'
import type { FitResult, Lease, LeaseModel } from './lease.js'

// What every lease keeps and carries, whatever its source: its books (the request's usage, the first token, the
// tokens), its key's reserved tokens, and the fields that keep its cache group's prompts apart on the backend.

/**
 * The books every lease keeps, local or upstream: the request's usage record (its model, its wait, its time on the
 * runtime, its tokens: access log, plugins/usage) and the scheduler's events for the first token and the tokens.
 * `started`: when the request asked (performance.now()); the slot is granted now, or (`seated`, a request handed on
 * early to wait in the runtime's own queue) when that resolves or its answer begins: its wait lasts until then, its
 * time on the runtime from then. One released before that got nothing: its record is left as a request that left the
 * line (no model, so nothing is booked). `usage`: the request's record, if any.
 */
function leaseBooks (name: string, started: number, usage: RequestUsage | undefined, events: {
  firstToken: (model: string, seconds: number) => void
  tokens: (model: string, prompt: number, generated: number) => void
}, seated?: Promise<void>, onSeated?: () => void): Pick<Lease, 'firstToken' | 'countTokens' | 'countSent'> & {
  granted: () => number
  held: () => number
  served: () => ServedTokens | undefined
} {
  let granted: number | null = null
  let closed = false
  const seat = (): void => {
    if (closed || granted !== null) return
    granted = performance.now()
    if (usage) { usage.model = name; usage.queueMs = (usage.queueMs ?? 0) + (granted - started) }
    onSeated?.()
  }
  if (seated === undefined) seat()
  else void seated.then(seat)
  let firstTokenSeen = false
  return {
    /** When the slot was granted; until then (handed on early), now. */
    granted: () => granted ?? performance.now(),
    /** Ends the books' time on the runtime; returns how long the slot was held (ms): 0 for one never seated. */
    held: () => {
      closed = true
      if (granted === null) return 0
      const heldMs = performance.now() - granted
      if (usage) usage.runtimeMs = (usage.runtimeMs ?? 0) + heldMs
      return heldMs
    },
    /** What the usage record says was served, once its tokens were counted (a source's speeds). */
    served: () => {
      if (usage === undefined || usage.counted !== true) return undefined
      const firstTokenAfterMs = usage.firstTokenMs === undefined ? undefined : usage.firstTokenMs - ((granted ?? performance.now()) - started)
      return { evaluated: usage.promptTokens - (usage.cachedTokens ?? 0), generated: usage.generatedTokens, ...(firstTokenAfterMs !== undefined ? { firstTokenAfterMs } : {}) }
    },
    firstToken: () => {
      if (firstTokenSeen) return
      firstTokenSeen = true
      // An answer that began holds a slot, whether or not the line knows it yet.
      seat()
      const ms = performance.now() - started
      if (usage) usage.firstTokenMs = ms
      events.firstToken(name, ms / 1000)
    },
    countTokens: (prompt, generated, cached = 0) => {
      seat()
      if (usage) { usage.promptTokens += prompt; usage.generatedTokens += generated; usage.cachedTokens = (usage.cachedTokens ?? 0) + cached; usage.counted = true }
      events.tokens(name, prompt, generated)
    },
    countSent: (tokens) => {
      if (tokens > 0) seat()
      if (usage) usage.sentTokens = (usage.sentTokens ?? 0) + tokens
    },
  }
}

/**
 * The salt a cache group's requests carry to the runtime: a digest, so that the group's name (a team's) and a
 * client's own salt never appear in a slot listing or a saved cache's description.
 */
export function cacheSalt (group: string): string {
  return createHash('sha256').update(group).digest('hex').slice(0, 32)
}

/**
 * What every request of a lease sends besides its own body so that it reuses only its cache group's prompts: the
 * group's salt where the runtime keeps salts apart; where it cannot (a build without llamagate's patch set), no
 * reuse at all, which leaks nothing. Null: no group (the one group of a server without keys), nothing to add.
 */
export function cacheGroupFields (group: string | undefined, separates: boolean): Record<string, unknown> | null {
  if (group === undefined) return null
  return separates ? { cache_salt: cacheSalt(group) } : { cache_prompt: false }
}

/**
 * A key's daily tokens, reserved now that the request's cap is known (core/base/request-usage.ts `reserveTokens`, set by
 * the quotas): the answer may generate at most what the key's day has left, so that requests running side by side
 * cannot pass the limit together. `generates`: false for embeddings and reranking, which reserve their prompt only.
 * @throws TooManyRequestsError from the quotas
 */
export function reserveTokens (resolved: ResolvedOptions, usage: RequestUsage | undefined, generates: boolean): ResolvedOptions {
  const reserve = usage?.reserveTokens
  if (reserve === undefined) return resolved
  const asked = generates ? resolved.sampling.max_tokens ?? -1 : 0
  const cap = reserve(asked)
  if (!generates || (asked !== -1 && asked <= cap)) return resolved
  return { ...resolved, sampling: { ...resolved.sampling, max_tokens: cap } }
}

/**
 * What a request was served, for its source's speeds: the prompt tokens evaluated (not taken from a cache), those
 * generated, and how long after its place was granted its first token came (a streamed one).
 */
export interface ServedTokens { evaluated: number, generated: number, firstTokenAfterMs?: number }

/** What a source hands over with a place it granted: the rest of a lease is the same for every source. */
export interface LeaseGrant {
  model: LeaseModel
  /** Where the request is sent, with whatever its source adds to every body (salt, slot). */
  endpoint: ModelEndpoint
  sampling: ResolvedOptions['sampling']
  contextLength: number
  /** When the request asked (performance.now()). */
  started: number
  usage: RequestUsage | undefined
  /**
   * Resolves when the request holds one of the backend's places, where it was handed on early to wait in the
   * backend's own queue first (plugins/leases/key-line.ts). @default held at once
   */
  seated?: Promise<void>
  /** Told once when a request handed on early is seated: by its line, or by its answer beginning. */
  onSeated?: () => void
  /** The source's own signal (an instance that went away, the app closing); the client's, if any. */
  signal: AbortSignal
  /** Aborted when the line takes the place back (background work, plugins/leases/key-line.ts): the request ends with its reason. */
  preempted?: AbortSignal
  clientSignal: AbortSignal | undefined
  /** Where every lease's first token and tokens are told (the lease router's events: metrics). */
  events: EventHub<LeaseEvents>
  fitPrompt(promptTokens: number): Promise<FitResult>
  /** The place goes back, after `heldMs` held, with what it served where the usage record counted it; called once. */
  release(heldMs: number, served: ServedTokens | undefined): void
}

/**
 * A place granted, as a surface holds it: the source's endpoint and sampling, one signal for the client and the
 * source together, the books (the request's usage record, the first token, the tokens) and a release that runs once.
 */
export function grantLease (grant: LeaseGrant): Lease {
  const { model, started, usage, clientSignal } = grant
  let released = false
  const books = leaseBooks(model.name, started, usage, {
    firstToken: (name, seconds) => grant.events.emit('firstToken', name, seconds),
    tokens: (name, prompt, generated) => grant.events.emit('tokens', name, prompt, generated),
  }, grant.seated, grant.onSeated)
  // Linked by hand and unlinked on release, not AbortSignal.any: a source's signal lives as long as it serves, and on
  // Node 20 every AbortSignal.any made from it stays on it (core/base/linked-signal.ts).
  const sources = [grant.signal, ...(clientSignal !== undefined ? [clientSignal] : []), ...(grant.preempted !== undefined ? [grant.preempted] : [])]
  const linked = sources.length === 1 ? null : linkedSignal(sources)
  return {
    model,
    endpoint: grant.endpoint,
    signal: linked?.signal ?? grant.signal,
    get loadDurationMs () { return books.granted() - started },
    contextLength: grant.contextLength,
    sampling: grant.sampling,
    fitPrompt: (promptTokens) => grant.fitPrompt(promptTokens),
    release: () => {
      if (released) return
      released = true
      linked?.unlink()
      grant.release(books.held(), books.served())
    },
    firstToken: books.firstToken,
    countTokens: books.countTokens,
    countSent: books.countSent,
  }
}
