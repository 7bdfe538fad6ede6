import type { GatewayMetrics } from './gateway-metrics.js'
import { scrapeRuntimes, type ScrapeTarget } from './runtime-scrape.js'
import { mergeRuntimeSeries } from './runtime-series.js'

/** How long a runtime may take to answer before /metrics goes on without its series (counted as a failure). */
const RUNTIME_TIMEOUT_MS = 2000

/**
 * The whole text of /metrics: the gateway's own metrics, then every loaded runtime's `llamacpp:` series with
 * `model` and `purpose` labels added, read from the runtimes now. A runtime that does not answer in time is left
 * out and counted in llamagate_runtime_scrape_failures_total; its model's KV-cache use is then left out too.
 */
export async function metricsText (metrics: GatewayMetrics, runtimes: ScrapeTarget[], modelNames: string[]): Promise<string> {
  const results = await scrapeRuntimes(runtimes, RUNTIME_TIMEOUT_MS)
  // A model with two runtimes (a chat model also embedding) holds the tokens of both in the contexts of both.
  const context = new Map<string, { busy: number, total: number } | null>()
  const series: Array<{ text: string, labels: Record<string, string> }> = []
  for (const result of results) {
    const { model, purpose } = result.target
    if ('error' in result) {
      metrics.runtimeScrapeFailed(model)
      context.set(model, null)
      continue
    }
    series.push({ text: result.metrics, labels: { model, purpose } })
    const sum = context.get(model)
    if (sum === null) continue
    context.set(model, { busy: (sum?.busy ?? 0) + result.context.busyTokens, total: (sum?.total ?? 0) + result.context.totalTokens })
  }
  const usage = new Map<string, number | null>()
  for (const [model, sum] of context) usage.set(model, sum === null ? null : sum.total > 0 ? sum.busy / sum.total : 0)
  metrics.setKvCacheUsage(modelNames, usage)
  return await metrics.text() + mergeRuntimeSeries(series)
}
