import type { Instance } from './instance.js'
import type { WaitProgress } from './lease.js'
import type { WaitEstimate } from './wait-estimate.js'

// Often enough that a client (or a proxy's idle timer) hears something well within any usual timeout.
const EVERY_MS = 1000
// The first report opens the stream, after which a failure can only be an error event, not a status: a wait shorter
// than this (a small model's load, a refusal at once) keeps its real status (a 400 "prompt is too long" that an agent
// compacts on, a 502 for no runtime), and a client hears nothing it need not.
const FIRST_MS = 2000

/** One acquire's report of its wait: `ticket` marks its place in the instance's line. */
export interface WaitReport {
  readonly ticket: object
  stop(): void
}

/** The key a model's measurements are kept under: an embedding instance of a chat model loads and serves differently. */
export function estimateKey (model: string, purpose: string): string {
  return `${model}\0${purpose}`
}

/**
 * Tells `onWait` where an acquire stands once it has waited two seconds, then every second, until stopped: a request
 * that does not wait, or not long, hears nothing.
 */
export function reportWait (instance: Instance, estimate: WaitEstimate, startedMs: number, onWait: (wait: WaitProgress) => void): WaitReport {
  const ticket = {}
  const tick = (): void => {
    const wait = whereItStands(instance, ticket, estimate, startedMs)
    // A listener's failure is its own (a closed stream): the wait goes on.
    if (wait !== null) try { onWait(wait) } catch {}
  }
  let timer: NodeJS.Timeout | null = null
  const first = setTimeout(() => { tick(); timer = setInterval(tick, EVERY_MS).unref() }, FIRST_MS).unref()
  return { ticket, stop: () => { clearTimeout(first); if (timer !== null) clearInterval(timer) } }
}

function whereItStands (instance: Instance, ticket: object, estimate: WaitEstimate, startedMs: number): WaitProgress | null {
  const model = instance.model.name
  const now = performance.now()
  if (instance.process === null) return { stage: 'room', model, elapsedMs: Math.round(now - startedMs) }
  if (instance.state === 'loading') {
    const expected = estimate.loadMs(estimateKey(model, instance.purpose))
    return { stage: 'load', model, elapsedMs: Math.round(Date.now() - instance.loadStartedAt), ...(expected !== null ? { expectedMs: expected } : {}) }
  }
  const position = instance.positionOf(ticket)
  if (position === 0) return null
  const expected = estimate.queueMs(estimateKey(model, instance.purpose), position, instance.options.num_parallel)
  return { stage: 'queue', model, position, of: instance.queued, elapsedMs: Math.round(now - startedMs), ...(expected !== null ? { expectedMs: expected } : {}) }
}
