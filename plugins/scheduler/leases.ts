import { createHash } from 'node:crypto'
import type { EventHub } from '../../core/event-hub.js'
import { linkedSignal } from '../../core/linked-signal.js'
import type { ResolvedOptions } from '../../core/request-options.js'
import { withBodyFields } from '../../runtimes/index.js'
import type { RequestUsage } from '../../core/request-usage.js'
import type { Instance } from './instance.js'
import type { FitResult, Lease } from './lease.js'
import type { SchedulerEvents } from './scheduler-events.js'

// What every lease keeps and carries, local or upstream: its books (the request's usage, the first token, the
// tokens), the fields that keep its cache group's prompts apart on the runtime, and a local instance's lease itself.

/**
 * The books every lease keeps, local or upstream: the request's usage record (its model, its wait, its time on the
 * runtime, its tokens: access log, plugins/usage) and the scheduler's events for the first token and the tokens.
 * `started`: when the request asked (performance.now()); the slot is granted now. `usage`: the request's record, if any.
 */
export function leaseBooks (name: string, started: number, usage: RequestUsage | undefined, events: {
  firstToken: (model: string, seconds: number) => void
  tokens: (model: string, prompt: number, generated: number) => void
}): Pick<Lease, 'firstToken' | 'countTokens' | 'countSent'> & { granted: number, held: () => number } {
  if (usage) usage.model = name
  const granted = performance.now()
  if (usage) usage.queueMs = (usage.queueMs ?? 0) + (granted - started)
  let firstTokenSeen = false
  return {
    granted,
    /** Ends the books' time on the runtime; returns how long the slot was held (ms). */
    held: () => {
      const heldMs = performance.now() - granted
      if (usage) usage.runtimeMs = (usage.runtimeMs ?? 0) + heldMs
      return heldMs
    },
    firstToken: () => {
      if (firstTokenSeen) return
      firstTokenSeen = true
      const ms = performance.now() - started
      if (usage) usage.firstTokenMs = ms
      events.firstToken(name, ms / 1000)
    },
    countTokens: (prompt, generated, cached = 0) => {
      if (usage) { usage.promptTokens += prompt; usage.generatedTokens += generated; usage.cachedTokens = (usage.cachedTokens ?? 0) + cached; usage.counted = true }
      events.tokens(name, prompt, generated)
    },
    countSent: (tokens) => {
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

/** What a lease on a local instance does besides its books: its prompt's refit, and giving its slot back. */
export interface LocalLeaseHooks {
  events: EventHub<SchedulerEvents>
  /** The runtime slot the request runs on (its session's, session-slots.ts); null: the runtime chooses. */
  slot: number | null
  fitPrompt(promptTokens: number): Promise<FitResult>
  /** The slot goes back (after `heldMs` on the runtime). */
  release(heldMs: number): void
}

/**
 * A slot on a loaded instance, as a surface holds it: the instance's runtime (each request of a cache group carrying
 * its group's salt, cacheGroupFields), the sampling options, a signal for the client and the instance together,
 * and the books (leaseBooks). `started`: when the request asked (performance.now()).
 */
export function localLease (instance: Instance, resolved: ResolvedOptions, started: number, usage: RequestUsage | undefined, clientSignal: AbortSignal | undefined, hooks: LocalLeaseHooks): Lease {
  let released = false
  const { events } = hooks
  const books = leaseBooks(instance.model.name, started, usage, {
    firstToken: (model, seconds) => events.emit('firstToken', model, seconds),
    tokens: (model, prompt, generated) => events.emit('tokens', model, prompt, generated),
  })
  // Linked by hand and unlinked on release, not AbortSignal.any: the instance's signal lives as long as the
  // model stays loaded, and on Node 20 every AbortSignal.any made from it stays on it (core/linked-signal.ts).
  const linked = clientSignal === undefined ? null : linkedSignal([instance.signal, clientSignal])
  const process = instance.process!
  const fields = { ...cacheGroupFields(usage?.cacheGroup, process.separatesCaches), ...(hooks.slot !== null ? { id_slot: hooks.slot } : {}) }
  return {
    model: instance.model,
    endpoint: Object.keys(fields).length === 0 ? process.endpoint : withBodyFields(process.endpoint, fields),
    signal: linked?.signal ?? instance.signal,
    loadDurationMs: books.granted - started,
    contextLength: instance.options.num_ctx,
    sampling: resolved.sampling,
    fitPrompt: hooks.fitPrompt,
    release: () => {
      if (released) return
      released = true
      linked?.unlink()
      hooks.release(books.held())
    },
    firstToken: books.firstToken,
    countTokens: books.countTokens,
    countSent: books.countSent,
  }
}
