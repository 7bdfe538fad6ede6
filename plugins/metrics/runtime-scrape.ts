import type { RuntimeEndpoint } from '../../runtimes/index.js'

/** A loaded runtime to ask, and whose it is. */
export interface ScrapeTarget {
  model: string
  purpose: string
  endpoint: Pick<RuntimeEndpoint, 'metricsText' | 'contextUse'>
}

/** What one runtime answered: its own metrics and how full its context is, or why it did not. */
export type ScrapeResult = { target: ScrapeTarget } & (
  { metrics: string, context: { busyTokens: number, totalTokens: number } } | { error: unknown }
)

/**
 * Asks every runtime for its metrics and context use, all at once. One that has not answered within `timeoutMs`
 * (busy decoding a long prompt, stuck) is given up and comes back with its error: /metrics goes on without it.
 */
export function scrapeRuntimes (targets: ScrapeTarget[], timeoutMs: number): Promise<ScrapeResult[]> {
  return Promise.all(targets.map(async (target): Promise<ScrapeResult> => {
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const [metrics, context] = await Promise.all([target.endpoint.metricsText(signal), target.endpoint.contextUse(signal)])
      return { target, metrics, context }
    } catch (error) {
      return { target, error }
    }
  }))
}
