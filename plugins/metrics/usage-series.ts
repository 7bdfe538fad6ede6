import { Counter, type Registry } from 'prom-client'
import type { UsageTotals } from '../usage/usage-book.js'

/** Where the per-key series are read from at each scrape: the usage plugin's totals, kept across restarts. */
export interface UsageRows {
  rows(): Iterable<{ key: string, model: string, totals: UsageTotals }>
}

/**
 * The per-key counters (docs/operations.md), labelled by key name and stored model name: both bounded, neither a
 * secret. Read from the usage totals when scraped rather than counted here, so that they carry on from where they
 * were after a restart instead of dropping to zero.
 */
export function registerUsageSeries (registry: Registry, usage: UsageRows): void {
  const registers = [registry]
  const series = (name: string, help: string, value: (t: UsageTotals) => number): void => {
    new Counter({
      name, help, labelNames: ['key', 'model'], registers,
      collect () {
        this.reset()
        for (const { key, model, totals } of usage.rows()) this.inc({ key, model }, value(totals))
      },
    })
  }
  series('llamagate_key_requests_total', 'Requests that used a model, by API key (anonymous when keys are off) and model', (t) => t.requests)
  series('llamagate_key_queue_seconds_total', 'Time requests waited for a load and a slot, by API key and model', (t) => t.queue_ms / 1000)
  series('llamagate_key_runtime_seconds_total', 'Time requests held a slot on a runtime, by API key and model', (t) => t.runtime_ms / 1000)
  new Counter({
    name: 'llamagate_key_tokens_total',
    help: 'Tokens by API key and model: kind prompt (whole prompts, cached ones included), cached (of those, taken from the runtime\'s cache), generated',
    labelNames: ['key', 'model', 'kind'],
    registers,
    collect () {
      this.reset()
      for (const { key, model, totals } of usage.rows()) {
        this.inc({ key, model, kind: 'prompt' }, totals.prompt_tokens)
        this.inc({ key, model, kind: 'cached' }, totals.cached_tokens)
        this.inc({ key, model, kind: 'generated' }, totals.generated_tokens)
      }
    },
  })
}
