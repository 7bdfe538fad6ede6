import fp from 'fastify-plugin'
import type { Backends } from '../../core/platform/backends.js'
import { PluginBackends } from './plugin-backends.js'
import { UpstreamCatalog } from './upstream-catalog.js'
import { upstreamEndpoint } from './upstream-endpoint.js'
import { UpstreamLeases } from './upstream-leases.js'
import { UpstreamProbe } from './upstream-probe.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The models of config.yaml's upstreams, as their probes see them: listed and served as if they were local. */
    upstreams: UpstreamCatalog
    /** Plugins' backends (core/platform/backends.ts): served as upstreams are, through the plugin's own function. */
    backends: Backends
  }
}

/**
 * config.yaml's `upstreams`: one probe per upstream, watching whether it answers and which models it lists. Started
 * once the app is ready (a CLI command that only builds the app reaches out to nobody), stopped when it closes.
 */
export default fp(async (app) => {
  const { store } = app
  const catalog = new UpstreamCatalog({
    upstreams: app.config.upstreams.map((upstream) => ({ upstream, watch: new UpstreamProbe(upstream, { log: app.log }) })),
    routing: app.config.upstreamRouting,
    // An upstream name may be no stored model's (`back/owner/name`): it cannot be a local one then.
    isLocal: (name) => store.lookup(name) !== null,
  })
  app.decorate('upstreams', catalog)
  const { config } = app
  const backends = new PluginBackends(catalog, config.limits.upstream)
  app.decorate('backends', backends)
  const leases = new UpstreamLeases({
    upstreams: {
      find: (name, route) => catalog.find(name, route),
      share: (name, route, localLoad) => catalog.share(name, route, localLoad),
      recheck: (upstream) => catalog.recheck(upstream),
      endpoint: (upstream, remoteModel) => backends.endpoint(upstream, remoteModel) ?? upstreamEndpoint(upstream, remoteModel),
    },
    queueLength: config.limits.queueLength,
    defaultOptions: config.defaultOptions,
    modelOptions: (name) => config.models.get(name)?.options,
    // Counted as a local lease's: the first token's time and each request's tokens.
    events: app.leases.events,
  })
  // A backend of the lease router: the names upstreams offer, and a share of the stored models they offer too.
  app.leases.addBackend(leases)
  app.addHook('onReady', async () => { catalog.start() })
  // What is in flight to an upstream ends, and its connections close.
  app.addHook('onClose', async () => {
    catalog.stop()
    await leases.close()
  })
}, { name: 'upstreams', dependencies: ['storage', 'leases'] })
