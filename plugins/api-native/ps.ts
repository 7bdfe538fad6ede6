import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { parseModelName } from '../../core/model-name.js'
import { ModelBody } from './schemas.js'

// keep_alive < 0 keeps a model loaded for good; Ollama shows such a model with a far-future expiry.
const FOREVER = '2318-01-01T00:00:00.000Z'

const ps: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/ps', async () => {
    const backend = app.runtimes.chosen?.backend ?? null
    const now = Date.now()
    const models = app.scheduler.list().map((i) => ({
      name: i.model.name,
      model: i.model.name,
      size: i.estimatedBytes,
      format: i.model.format,
      digest: i.model.digest,
      details: i.model.details,
      // While busy, a model is due to unload its keep-alive after the current requests end.
      expires_at: i.keepAliveMs === Infinity ? FOREVER : new Date(i.expiresAt ?? now + i.keepAliveMs).toISOString(),
      size_vram: backend === 'cpu' || backend === null ? 0 : i.estimatedBytes,
      context_length: i.options.num_ctx,
      num_parallel: i.options.num_parallel,
      state: i.state,
      runtime: backend,
      pid: i.process?.pid ?? null,
      active_requests: i.active,
      queued_requests: i.waiters.length,
    }))
    return { models }
  })

  app.post('/api/stop', { schema: { body: ModelBody } }, async (request) => {
    parseModelName(request.body.model)
    await app.scheduler.stop(request.body.model)
    return { status: 'stopped' }
  })
}

export default ps
