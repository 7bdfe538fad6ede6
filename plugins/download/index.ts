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
  app.decorate('puller', new PullService({ store: app.store, client: hub }))
}, { name: 'download', dependencies: ['storage'] })
