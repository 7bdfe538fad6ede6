import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { parseModelName } from '../../core/base/model-name.js'
import { ollamaDetails } from '../models-api/tag-shape.js'
import type { UpstreamModel } from '../upstreams/upstream-catalog.js'
import { ModelBody, PsReply } from './schemas.js'

// keep_alive < 0 keeps a model loaded for good; Ollama shows such a model with a far-future expiry.
const FOREVER = '2318-01-01T00:00:00.000Z'
const seconds = (ms: number): number => Math.round(ms / 100) / 10
const orNull = (value: number | null, shape: (v: number) => number): number | null => value === null ? null : shape(value)

const ps: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/ps', { config: { scope: 'any', modelList: { field: 'models', key: 'name', alsoFields: ['prepared'] } }, schema: { response: { 200: PsReply } } }, async () => {
    const local = app.scheduler.snapshot().map((m) => ({
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
      // The most context_length grows to when a prompt needs more (docs/api.md, "Context lengths").
      max_context_length: m.maxContextLength,
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
      // What the swap decision weighs (docs/operations.md, "When models do not fit together"), and why it came in.
      estimates: {
        load: orNull(m.costs.loadMs, seconds),
        prepared_load: orNull(m.costs.preparedLoadMs, seconds),
        prepare: orNull(m.costs.prepareMs, seconds),
        restore: orNull(m.costs.restoreMs, seconds),
        unload: orNull(m.costs.unloadMs, seconds),
        request: orNull(m.costs.requestMs, seconds),
        return_gap: orNull(m.costs.returnGapMs, seconds),
        prompt_tokens_per_s: orNull(m.costs.promptTokensPerS, Math.round),
        generated_tokens_per_s: orNull(m.costs.generatedTokensPerS, Math.round),
      },
      swap: m.swap,
      where: 'local' as const,
    }))
    // Runtimes prepared ahead hold none of the room and serve nothing yet: apart from the models, which are Ollama's.
    const prepared = app.scheduler.prepared().map((p) => ({ name: p.model, purpose: p.purpose, pid: p.pid, why: p.why, expires_at: p.expiresAt === null ? null : new Date(p.expiresAt).toISOString() }))
    return { models: [...local, ...upstreamsInUse(app.leases.requestCounts(), app.upstreams.list())], prepared }
  })

  app.post('/api/stop', { config: { scope: 'manage' }, schema: { body: ModelBody } }, async (request) => {
    parseModelName(request.body.model)
    await app.scheduler.stop(request.body.model)
    return { status: 'stopped' }
  })
}

/**
 * The upstreams' models with requests in flight or waiting for a turn: an upstream's model holds nothing here
 * between requests (no process, no memory, no keep-alive), so it is listed only while it is used. The catalog's
 * list names the upstream, as /api/tags does; counts are kept per served name.
 */
function upstreamsInUse (counts: Map<string, { inFlight: number, queued: number }>, offered: UpstreamModel[]) {
  const now = new Date().toISOString()
  return offered.flatMap((m) => {
    const count = counts.get(m.name)
    if (!count || count.inFlight + count.queued === 0) return []
    return [{
      name: m.name,
      model: m.name,
      size: 0,
      format: 'remote',
      digest: '',
      details: ollamaDetails({ format: 'remote', gguf: null }),
      // Nothing stays loaded once its requests end.
      expires_at: now,
      size_vram: 0,
      // Its context is the upstream's own, unknown here.
      context_length: 0,
      max_context_length: 0,
      num_parallel: m.upstream.maxConcurrent,
      state: 'loaded' as const,
      purpose: 'generate',
      runtime: null,
      pid: null,
      active_requests: count.inFlight,
      queued_requests: count.queued,
      loading: null,
      expected_wait: null,
      rpc_workers: [],
      where: 'upstream' as const,
      upstream: m.upstream.name,
      remote_host: m.upstream.url,
      remote_model: m.remoteModel,
    }]
  })
}

export default ps
