import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { modelNamedIn } from '../../core/base/model-name.js'
import { GatewayMetrics } from './gateway-metrics.js'
import { listenForMetrics } from './metrics-listener.js'
import metricsRoute from './metrics-route.js'
import { metricsText } from './metrics-text.js'
import { observeServices } from './observe.js'
import { registerUsageSeries } from './usage-series.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's Prometheus metrics (absent when metrics.enabled is false). */
    metrics?: GatewayMetrics
  }
}

/**
 * Prometheus metrics (docs/operations.md): counts every answered request, observes the scheduler, the prompt cache,
 * the pulls and the converter, and serves GET /metrics with each loaded runtime's own series added. On the main
 * address the security plugin's key check covers it like any other route; with `metrics.listen` it is served on a
 * listener of its own, without a key, and not on the main address (metrics-listener.ts).
 */
export default fp(async (app) => {
  const { enabled, listen } = app.config.metrics
  if (!enabled) return
  const { scheduler, store } = app
  const modelNames = (): string[] => store.list().map((r) => r.name)
  const metrics = new GatewayMetrics({
    modelNames,
    requestCounts: () => app.leases.requestCounts(),
    loadedCounts: () => {
      const counts = new Map<string, number>()
      for (const { model } of scheduler.loadedRuntimes()) counts.set(model, (counts.get(model) ?? 0) + 1)
      return counts
    },
    swapCosts: (model) => scheduler.costs(model),
  })
  app.decorate('metrics', metrics)
  observeServices(metrics, { scheduler, leases: app.leases, promptCache: app.promptCache, puller: app.puller, converter: app.converter })
  registerUsageSeries(metrics.registry, app.usage)

  // The model label is the stored model's name, or an upstream's as it lists it, or empty: a name nobody stored or
  // lists (a 404) must not make a series of its own, or any client could grow the metrics without bound.
  const modelOf = (request: FastifyRequest): string => {
    const name = modelNamedIn(request.body)
    if (name === undefined) return ''
    const stored = store.lookup(name)
    if (stored !== null) return stored.name
    const remote = app.upstreams.find(name)
    return remote !== null && remote.healthy ? remote.name : ''
  }
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url
    // A scrape counting itself would only measure the scraper.
    if (route !== '/metrics') metrics.request(app.surfaces.labelOf(route ?? request.url), modelOf(request), reply.statusCode, reply.elapsedTime / 1000, request.usage?.priority)
    done()
  })

  const route = { text: () => metricsText(metrics, scheduler.loadedRuntimes(), modelNames()), contentType: metrics.contentType }
  if (listen === null) {
    await app.register(metricsRoute, route)
    return
  }
  const { limits, allowedHosts } = app.config
  const admin = await listenForMetrics({
    listen, headerTimeoutMs: limits.headerTimeoutMs, connectionsPerClient: limits.connectionsPerClient, allowedHosts, route, log: app.log,
  })
  app.addHook('onClose', () => admin.close())
  app.startupNotes.push(`metrics on http://${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}/metrics`)
}, { name: 'metrics', dependencies: ['storage', 'leases', 'prompt-cache', 'scheduler', 'download', 'convert', 'usage', 'upstreams'] })
