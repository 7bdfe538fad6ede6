import { Gauge, type Registry } from 'prom-client'
import type { BatchRecord } from './batch-store.js'

const STATUSES = ['validating', 'in_progress', 'finalizing', 'cancelling', 'completed', 'failed', 'expired', 'cancelled'] as const

/**
 * The batches in /metrics: how many there are by status, and the requests of those not over yet by state (waiting to
 * run, answered, failed), read from the batches' live records when scraped.
 */
export function registerBatchSeries (registry: Registry, records: () => Iterable<BatchRecord>): void {
  new Gauge({
    name: 'llamagate_batches',
    help: 'Batches (OpenAI\'s Batch API and Anthropic\'s Message Batches) by status',
    labelNames: ['status'],
    registers: [registry],
    collect () {
      this.reset()
      const counts = new Map<string, number>(STATUSES.map((s) => [s, 0]))
      for (const { batch } of records()) counts.set(batch.status, (counts.get(batch.status) ?? 0) + 1)
      for (const [status, count] of counts) this.set({ status }, count)
    },
  })
  new Gauge({
    name: 'llamagate_batch_requests',
    help: 'Requests of the batches not over yet: waiting to run (queued), answered (completed) and failed, all background work',
    labelNames: ['state'],
    registers: [registry],
    collect () {
      this.reset()
      const sums = { queued: 0, completed: 0, failed: 0 }
      for (const { batch } of records()) {
        if (!['validating', 'in_progress', 'finalizing', 'cancelling'].includes(batch.status)) continue
        const { total, completed, failed } = batch.request_counts
        sums.queued += Math.max(total - completed - failed, 0)
        sums.completed += completed
        sums.failed += failed
      }
      for (const [state, value] of Object.entries(sums)) this.set({ state }, value)
    },
  })
}
