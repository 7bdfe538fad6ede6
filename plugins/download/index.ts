import fp from 'fastify-plugin'
import { HubClient } from './hub-client.js'
import { PullService } from './pull-service.js'
import type { ModelSources } from '../../core/base/model-sources.js'
import { ModelSourceRegistry } from './model-source-pull.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The hub client (endpoint from HF_ENDPOINT / config; token from HF_TOKEN). */
    hub: HubClient
    /** Pulls of models from the hub, shared per model. */
    puller: PullService
    /** Plugins' model sources (core/base/model-sources.ts): `/api/pull` asks them before the hub. */
    modelSources: ModelSources
  }
}

export default fp(async (app) => {
  // The hub client's retries (API calls, file requests) are the pulls' own: told to the pulls' observers.
  const hub = new HubClient({
    endpoint: app.config.hub.endpoint, token: app.config.hub.token, allowPrivateRedirects: app.config.hub.allowPrivateRedirects,
    onRetry: (reason) => puller.events.emit('retry', reason),
  })
  app.decorate('hub', hub)
  const sources = new ModelSourceRegistry()
  app.decorate('modelSources', sources)
  // A SafeTensors model is converted at the end of its pull, to the default dtype (or the pull's own).
  const puller = new PullService({
    store: app.store,
    client: hub,
    sources,
    convert: (name, dtype, emit, signal) => app.ensureVariant(name, dtype ?? app.config.defaultOptions.dtype ?? 'f16', {
      signal, onProgress: (p) => emit({ status: p.status, ...(p.total !== undefined ? { total: p.total, completed: p.completed } : {}) }),
    }),
  })
  app.decorate('puller', puller)
}, { name: 'download', dependencies: ['storage', 'convert'] })
