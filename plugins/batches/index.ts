import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import { batchCredential, BATCH_HEADER, TOKEN_HEADER } from './batch-credential.js'
import { BatchRunner, type Answer } from './batch-runner.js'
import { registerBatchSeries } from './batch-series.js'
import { BatchStore, type BatchRecord } from './batch-store.js'
import batchesRoutes from './batches-routes.js'
import { FileStore } from './file-store.js'
import filesRoutes from './files-routes.js'
import messageBatchesRoutes from './message-batches-routes.js'

/**
 * The Batch APIs: OpenAI's `/v1/files` and `/v1/batches`. A batch's requests run through this gateway's own routes
 * (every rule, hook, limit and count of a request applies, under the key that made the batch), as background work
 * (docs/operations.md, "Priority classes"), from what is on disk under `<data_dir>/batches`: a restart goes on
 * where it stopped.
 */
export default fp(async (app) => {
  const root = join(app.config.dataDir, 'batches')
  const { batchFileBytes, batchBytesPerKey, batchRequests, batchConcurrency } = app.config.limits
  const files = new FileStore(join(root, 'files'), { fileBytes: batchFileBytes, bytesPerOwner: batchBytesPerKey })
  const store = new BatchStore(join(root, 'runs'))
  const records = new Map<string, BatchRecord>()
  const token = randomBytes(32).toString('base64url')
  const execute = async (record: BatchRecord, line: { url: string, body: Record<string, unknown> }): Promise<Answer> => {
    // Background work unless the line asks for a class itself (Anthropic's bodies by vLLM's priority: their own
    // service_tier has no such tier); a whole answer, never a stream.
    const asks = (line.body.service_tier !== undefined && line.url !== '/v1/messages') || line.body.priority !== undefined
    const background = line.url === '/v1/messages' ? { priority: 1 } : { service_tier: 'flex' }
    const body = { ...line.body, stream: false, ...(asks ? {} : background) }
    const res = await app.inject({ method: 'POST', url: line.url, payload: body, headers: { 'content-type': 'application/json', [TOKEN_HEADER]: token, [BATCH_HEADER]: record.batch.id } })
    let parsed: unknown
    try { parsed = res.json() } catch { parsed = res.body }
    const retryAfter = Number(res.headers['retry-after'])
    return { status: res.statusCode, body: parsed, ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}) }
  }
  const runner = new BatchRunner({ store, files, execute, concurrency: batchConcurrency, maxRequests: batchRequests, log: app.log })
  app.decorate('batchFiles', files)
  app.decorate('batches', { records, store, runner })
  // In /metrics where it is on (the metrics plugin comes first): the batches by status, their requests by state.
  if (app.metrics !== undefined) registerBatchSeries(app.metrics.registry, () => [...records.values()].map((r) => runner.live(r.batch.id) ?? r))
  app.authenticators.add(batchCredential(token, (id) => { const record = records.get(id); return record === undefined ? undefined : record.grant }, (name) => app.keyRing.grantOf(name)))
  await app.register(filesRoutes)
  await app.register(batchesRoutes)
  await app.register(messageBatchesRoutes)
  app.addHook('onReady', async () => {
    await files.load()
    const loaded = await store.load()
    for (const { record } of loaded) records.set(record.batch.id, record)
    runner.resume(loaded)
  })
  app.addHook('onClose', async () => { await runner.close() })
}, { name: 'batches', dependencies: ['security', 'openai-api', 'anthropic-api'] })
