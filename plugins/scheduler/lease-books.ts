import type { RequestUsage } from '../../core/request-usage.js'
import type { Lease } from './lease.js'

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
