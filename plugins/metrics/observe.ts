import type { Converter } from '../convert/converter.js'
import type { PullService } from '../download/pull-service.js'
import type { LeaseRouter } from '../leases/lease-router.js'
import type { PromptCaches } from '../prompt-cache/prompt-caches.js'
import type { Scheduler } from '../scheduler/scheduler.js'
import type { GatewayMetrics } from './gateway-metrics.js'

/** Subscribes the metrics to what the services tell their observers. */
export function observeServices (metrics: GatewayMetrics, services: { scheduler: Scheduler, leases: LeaseRouter, promptCache: PromptCaches | null, puller: PullService, converter: Converter }): void {
  const { scheduler, leases, promptCache, puller, converter } = services
  // Every lease's, local or an upstream's.
  leases.events.on('firstToken', (model, seconds) => metrics.firstToken(model, seconds))
  leases.events.on('tokens', (model, prompt, generated) => metrics.tokens(model, prompt, generated))
  scheduler.events.on('loaded', (model, _purpose, seconds) => metrics.loaded(model, seconds))
  scheduler.events.on('loadFailed', (model) => metrics.loadFailed(model))
  scheduler.events.on('evicted', (model, _for, reason) => metrics.evicted(model, reason))
  scheduler.events.on('crashed', (model) => metrics.crashed(model))
  promptCache?.events.on('saved', (model, tokens, bytes) => metrics.promptCache(model, 'saved', tokens, bytes))
  promptCache?.events.on('restored', (model, tokens, bytes) => metrics.promptCache(model, 'restored', tokens, bytes))
  promptCache?.events.on('reused', (model, tokens) => metrics.promptCache(model, 'reused', tokens, 0))
  promptCache?.events.on('missed', (model) => metrics.promptCache(model, 'miss', 0, 0))
  promptCache?.events.on('unused', (model, tokens) => metrics.promptCache(model, 'unused', tokens, 0))
  puller.events.on('bytes', (count) => metrics.pulled(count))
  puller.events.on('retry', () => metrics.pullRetried())
  puller.events.on('failed', () => metrics.pullFailed())
  converter.events.on('converted', (dtype, seconds) => metrics.converted(dtype, seconds))
  converter.events.on('failed', (dtype) => metrics.conversionFailed(dtype))
}
