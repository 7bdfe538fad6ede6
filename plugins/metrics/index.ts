import Fastify, { type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ConnectionCaps } from '../../core/connection-caps.js'
import { headerTimeoutOptions } from '../../core/header-timeout.js'
import { modelNamedIn } from '../../core/model-name.js'
import { GatewayMetrics } from './gateway-metrics.js'
import metricsRoute from './metrics-route.js'
import { metricsText } from './metrics-text.js'
import { observeServices } from './observe.js'
import { registerUsageSeries } from './usage-series.js'
import { foreignHost } from '../security/host-guard.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's Prometheus metrics (absent when metrics.enabled is false). */
    metrics?: GatewayMetrics
  }
}

/**
 * Prometheus metrics (docs/operations.md): counts every answered request, observes the scheduler, the pulls and the
 * converter, and serves GET /metrics with each loaded runtime's own series added. On the main address the security
 * plugin's key check covers it like any other route; with `metrics.listen` it is served on a listener of its own,
 * without a key, and not on the main address.
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
  })
  app.decorate('metrics', metrics)
  observeServices(metrics, { scheduler, puller: app.puller, converter: app.converter })
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
    if (route !== '/metrics') metrics.request(app.surfaces.labelOf(route ?? request.url), modelOf(request), reply.statusCode, reply.elapsedTime / 1000)
    done()
  })

  const route = { text: () => metricsText(metrics, scheduler.loadedRuntimes(), modelNames()), contentType: metrics.contentType }
  if (listen === null) {
    await app.register(metricsRoute, route)
    return
  }
  const { limits } = app.config
  // The main address's limits on slow heads and on connections per client hold here too (no key to cap by).
  const admin = Fastify({ logger: false, http: headerTimeoutOptions(limits.headerTimeoutMs) })
  const connections = new ConnectionCaps({ perClient: limits.connectionsPerClient, unauthenticated: null, log: app.log })
  connections.guard(admin.server)
  admin.addHook('preClose', async () => { connections.stop() })
  // Keyless, so at least held to its own host names: a rebinding page must not read the model names from it.
  admin.addHook('onRequest', async (request, reply) => {
    const name = foreignHost(listen.host, request.headers.host, app.config.allowedHosts)
    if (name !== null) return reply.code(403).send({ error: `host "${name}" is not allowed on a listener bound to ${listen.host}; add it to allowed_hosts in config.yaml` })
  })
  await admin.register(metricsRoute, route)
  await admin.listen({ host: listen.host, port: listen.port })
  app.addHook('onClose', () => admin.close())
  app.startupNotes.push(`metrics on http://${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}/metrics`)
}, { name: 'metrics', dependencies: ['storage', 'scheduler', 'download', 'convert', 'usage', 'upstreams'] })
