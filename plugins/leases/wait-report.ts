import type { WaitProgress } from './lease.js'

// Often enough that a client (or a proxy's idle timer) hears something well within any usual timeout.
const EVERY_MS = 1000
// The first report opens the stream, after which a failure can only be an error event, not a status: a wait shorter
// than this (a small model's load, a refusal at once) keeps its real status (a 400 "prompt is too long" that an agent
// compacts on, a 502 for no runtime), and a client hears nothing it need not.
const FIRST_MS = 2000

/** One request's report of its wait: `ticket` marks its place in a line (`takeSeat`, `positionOf`). */
export interface WaitReport {
  readonly ticket: object
  stop(): void
}

/**
 * Tells `onWait` where a request stands (as its source sees it: `whereItStands`) once it has waited two seconds, then
 * every second, until stopped: a request that does not wait, or not long, hears nothing.
 */
export function reportWait (whereItStands: (ticket: object) => WaitProgress | null, onWait: (wait: WaitProgress) => void): WaitReport {
  const ticket = {}
  const tick = (): void => {
    const wait = whereItStands(ticket)
    // A listener's failure is its own (a closed stream): the wait goes on.
    if (wait !== null) try { onWait(wait) } catch {}
  }
  let timer: NodeJS.Timeout | null = null
  const first = setTimeout(() => { tick(); timer = setInterval(tick, EVERY_MS).unref() }, FIRST_MS).unref()
  return { ticket, stop: () => { clearTimeout(first); if (timer !== null) clearInterval(timer) } }
}
