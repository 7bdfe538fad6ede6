import fp from 'fastify-plugin'
import { HubClient } from './hub-client.js'
import { PullService } from './pull-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The hub client (endpoint from HF_ENDPOINT / config; token from HF_TOKEN). */
    hub: HubClient
    /** Pulls of models from the hub, shared per model. */
    puller: PullService
  }
}

export default fp(async (app) => {
  const hub = new HubClient({ endpoint: app.config.hub.endpoint, token: app.config.hub.token })
  app.decorate('hub', hub)
  // A SafeTensors model is converted at the end of its pull, to the default dtype (or the pull's own).
  app.decorate('puller', new PullService({
    store: app.store,
    client: hub,
    convert: (name, dtype, emit, signal) => app.ensureVariant(name, dtype ?? app.config.defaultOptions.dtype ?? 'f16', {
      signal, onProgress: (p) => emit({ status: p.status, ...(p.total !== undefined ? { total: p.total, completed: p.completed } : {}) }),
    }),
  }))
}, { name: 'download', dependencies: ['storage', 'convert'] })
