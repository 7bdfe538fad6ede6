import fp from 'fastify-plugin'
import { UpstreamProbe } from '../../runtimes/index.js'
import { UpstreamCatalog } from './upstream-catalog.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The models of config.yaml's upstreams, as their probes see them: listed and served as if they were local. */
    upstreams: UpstreamCatalog
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
  app.addHook('onReady', async () => { catalog.start() })
  app.addHook('onClose', async () => { catalog.stop() })
}, { name: 'upstreams', dependencies: ['storage'] })
