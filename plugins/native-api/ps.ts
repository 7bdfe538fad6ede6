import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { parseModelName } from '../../core/model-name.js'
import { ollamaDetails } from '../models-api/tag-shape.js'
import { ModelBody } from './schemas.js'

// keep_alive < 0 keeps a model loaded for good; Ollama shows such a model with a far-future expiry.
const FOREVER = '2318-01-01T00:00:00.000Z'
const seconds = (ms: number): number => Math.round(ms / 100) / 10

const ps: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/ps', { config: { scope: 'any', modelList: { field: 'models', key: 'name' } } }, async () => {
    const models = app.scheduler.snapshot().map((m) => ({
      name: m.model.name,
      model: m.model.name,
      size: m.estimatedBytes,
      format: m.model.format,
      digest: m.model.digest,
      // Ollama's details, built as /api/tags builds them, from the record the instance was loaded with.
      details: ollamaDetails(m.model),
      expires_at: m.expiresAt === null ? FOREVER : new Date(m.expiresAt).toISOString(),
      size_vram: m.backend === 'cpu' || m.backend === null ? 0 : m.estimatedBytes,
      context_length: m.contextLength,
      num_parallel: m.parallel,
      state: m.state,
      // A chat model asked for embeddings runs a second instance, started to embed.
      purpose: m.purpose,
      runtime: m.backend,
      pid: m.pid,
      active_requests: m.activeRequests,
      queued_requests: m.queuedRequests,
      // Seconds: the load so far and its earlier loads' median (null before one); no fraction, llama-server tells none.
      loading: m.loading === null ? null : { elapsed: seconds(m.loading.elapsedMs), expected: m.loading.expectedMs === null ? null : seconds(m.loading.expectedMs) },
      // Seconds a request arriving now would wait for a slot, from measured loads and requests; null when unknown.
      expected_wait: m.expectedWaitMs === null ? null : seconds(m.expectedWaitMs),
      // Names from config.yaml's rpc.workers that hold its layers; GET /api/rpc-workers says how each is.
      rpc_workers: m.rpcWorkers,
    }))
    return { models }
  })

  app.post('/api/stop', { config: { scope: 'manage' }, schema: { body: ModelBody } }, async (request) => {
    parseModelName(request.body.model)
    await app.scheduler.stop(request.body.model)
    return { status: 'stopped' }
  })
}

export default ps
