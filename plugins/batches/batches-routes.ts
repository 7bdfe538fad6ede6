import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { BadRequestError, NotFoundError } from '../../core/base/errors.js'
import { parseDuration } from '../../core/base/units.js'
import type { BatchRunner } from './batch-runner.js'
import { BatchStore, type BatchObject, type BatchRecord, type GrantSnapshot } from './batch-store.js'
import { ownerOf, page } from './files-routes.js'
import { BatchCreateBody, BatchListQuery, IdParams, limitOf } from './schemas.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Batch APIs' batches (plugins/batches): every batch's record, by id. */
    batches: { records: Map<string, BatchRecord>, store: BatchStore, runner: BatchRunner }
  }
}

const WEEK_MS = 7 * 24 * 3600_000

/** The credential a new batch's requests run under: the key that made it, as it is now (null: keys off). */
function grantSnapshot (request: FastifyRequest): GrantSnapshot | null {
  const grant = request.grant
  if (grant === null || grant === undefined) return null
  return {
    name: grant.name, scopes: [...grant.scopes], models: [...grant.models], limits: { ...grant.limits }, cacheGroup: grant.cacheGroup,
    ...(grant.priority !== undefined ? { priority: { ...grant.priority } } : {}),
  }
}

/** The batch `id` if it is the request's key's. @throws NotFoundError otherwise (the same words whether it exists or not) */
export function ownBatch (app: { batches: { records: Map<string, BatchRecord>, runner: BatchRunner } }, request: FastifyRequest, id: string): BatchRecord {
  const record = app.batches.records.get(id)
  if (record === undefined || record.owner !== ownerOf(request)) throw new NotFoundError(`no batch with id "${id}"`)
  return app.batches.runner.live(id) ?? record
}

/**
 * Makes a batch for `endpoint` of `input`: a file of the request's key (`fileId`), or the requests a body held
 * (`inputPath`, Anthropic's), and hands it to the runner.
 */
export async function createBatch (app: Parameters<FastifyPluginAsyncTypebox>[0], request: FastifyRequest, input: { fileId?: string, inputPath?: string, endpoint: string, window: string, metadata: Record<string, string> | null, api: BatchRecord['api'] }): Promise<BatchRecord> {
  const windowMs = parseDuration(input.window)
  if (windowMs === null || windowMs <= 0 || windowMs > WEEK_MS) throw new BadRequestError(`completion_window "${input.window}": a duration of up to a week (24h as OpenAI's)`, 'invalid_completion_window')
  if (input.fileId !== undefined) {
    const file = app.batchFiles.get(ownerOf(request), input.fileId)
    if (file.file.purpose !== 'batch') throw new BadRequestError(`the file "${input.fileId}" was not uploaded with purpose "batch"`, 'invalid_input_file')
  }
  const created = Math.floor(Date.now() / 1000)
  const batch: BatchObject = {
    id: BatchStore.newId(), object: 'batch', endpoint: input.endpoint, errors: null, input_file_id: input.fileId ?? '',
    completion_window: input.window, status: 'validating', output_file_id: null, error_file_id: null, created_at: created,
    in_progress_at: null, expires_at: created + Math.ceil(windowMs / 1000), finalizing_at: null, completed_at: null,
    failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null, request_counts: { total: 0, completed: 0, failed: 0 },
    metadata: input.metadata,
  }
  const record: BatchRecord = { batch, owner: ownerOf(request), grant: grantSnapshot(request), api: input.api }
  await app.batches.store.create(record, input.inputPath ?? app.batchFiles.dataPath(input.fileId ?? ''))
  app.batches.records.set(batch.id, record)
  app.batches.runner.submit(record)
  return record
}

/** OpenAI's `/v1/batches`: create, retrieve, list, cancel, each a key's own. */
const batchesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/batches', { config: { scope: 'infer' }, schema: { body: BatchCreateBody } }, async (request) => {
    const { input_file_id: fileId, endpoint, completion_window: window, metadata } = request.body
    return (await createBatch(app, request, { fileId, endpoint, window, metadata: metadata ?? null, api: 'openai' })).batch
  })

  app.get('/v1/batches', { config: { scope: 'infer' }, schema: { querystring: BatchListQuery } }, async (request) => {
    const owner = ownerOf(request)
    const mine = [...app.batches.records.values()].filter((r) => r.owner === owner && r.api === 'openai').map((r) => (app.batches.runner.live(r.batch.id) ?? r).batch)
    return page(mine, 'desc', limitOf(request.query.limit, 20, 100), request.query.after)
  })

  app.get('/v1/batches/:id', { config: { scope: 'infer' }, schema: { params: IdParams } }, async (request) => {
    return ownBatch(app, request, request.params.id).batch
  })

  app.post('/v1/batches/:id/cancel', { config: { scope: 'infer' }, schema: { params: IdParams } }, async (request) => {
    const record = ownBatch(app, request, request.params.id)
    return (await app.batches.runner.cancel(record)).batch
  })
}

export default batchesRoutes
