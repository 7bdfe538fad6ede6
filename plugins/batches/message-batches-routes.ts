import { createReadStream } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { BadRequestError, NotFoundError } from '../../core/base/errors.js'
import type { BatchRecord } from './batch-store.js'
import { createBatch, ownBatch } from './batches-routes.js'
import { ownerOf } from './files-routes.js'

/** Anthropic's batch ids are OpenAI's with another prefix: one machinery, one folder per batch. */
const toAnthropic = (id: string): string => `msgbatch_${id.slice('batch_'.length)}`
const fromAnthropic = (id: string): string => `batch_${id.slice('msgbatch_'.length)}`
const iso = (seconds: number | null): string | null => seconds === null ? null : new Date(seconds * 1000).toISOString()

const CreateBody = Type.Object({
  requests: Type.Array(Type.Object({
    custom_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
    params: Type.Object({ model: Type.String({ minLength: 1 }) }),
  }), { minItems: 1 }),
})
const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) })
const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  after_id: Type.Optional(Type.String({ maxLength: 200 })),
  before_id: Type.Optional(Type.String({ maxLength: 200 })),
})

/** A batch as Anthropic's Message Batches API shows it. */
function messageBatch (record: BatchRecord, request: FastifyRequest): Record<string, unknown> {
  const { batch } = record
  const over = ['completed', 'cancelled', 'expired', 'failed'].includes(batch.status)
  const { total, completed, failed } = batch.request_counts
  const id = toAnthropic(batch.id)
  return {
    id,
    type: 'message_batch',
    processing_status: over ? 'ended' : batch.status === 'cancelling' ? 'canceling' : 'in_progress',
    // Each result's kind is in its line; while it runs, what is not answered yet is processing.
    request_counts: over
      ? { processing: 0, succeeded: completed, errored: failed, canceled: 0, expired: 0 }
      : { processing: Math.max(total - completed - failed, 0), succeeded: completed, errored: failed, canceled: 0, expired: 0 },
    ended_at: iso(batch.completed_at ?? batch.cancelled_at ?? batch.expired_at ?? batch.failed_at),
    created_at: iso(batch.created_at),
    expires_at: iso(batch.expires_at),
    archived_at: null,
    cancel_initiated_at: iso(batch.cancelling_at),
    results_url: over ? `${request.protocol}://${request.host}/v1/messages/batches/${id}/results` : null,
  }
}

/** One OpenAI-style result line as Anthropic's: succeeded with the message, errored, canceled or expired. */
function anthropicResult (line: { custom_id: string | null, response: { status_code: number, body: unknown } | null, error: { code: string, message: string } | null }): unknown {
  if (line.response !== null && line.response.status_code >= 200 && line.response.status_code < 300) return { custom_id: line.custom_id, result: { type: 'succeeded', message: line.response.body } }
  if (line.error?.code === 'batch_cancelled') return { custom_id: line.custom_id, result: { type: 'canceled' } }
  if (line.error?.code === 'batch_expired') return { custom_id: line.custom_id, result: { type: 'expired' } }
  const body = line.response?.body as { error?: unknown } | undefined
  const error = body?.error ?? { type: 'invalid_request_error', message: line.error?.message ?? 'the request failed' }
  return { custom_id: line.custom_id, result: { type: 'errored', error: { type: 'error', error } } }
}

/**
 * Anthropic's Message Batches (`/v1/messages/batches`: create, retrieve, list, cancel, results as JSONL), on the same
 * machinery as OpenAI's Batch API: each request a `/v1/messages` call of the key that made the batch, as background
 * work, durable across restarts.
 */
const messageBatchesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const own = (request: FastifyRequest, id: string): BatchRecord => {
    if (!id.startsWith('msgbatch_')) throw new NotFoundError(`no message batch with id "${id}"`)
    const record = ownBatch(app, request, fromAnthropic(id))
    if (record.api !== 'anthropic') throw new NotFoundError(`no message batch with id "${id}"`)
    return record
  }

  app.post('/v1/messages/batches', { config: { scope: 'infer' }, schema: { body: CreateBody } }, async (request) => {
    const { requests } = request.body
    if (requests.length > app.config.limits.batchRequests) throw new BadRequestError(`${requests.length} requests, more than limits.batch_requests (${app.config.limits.batchRequests})`, 'invalid_request_error')
    const lines = requests.map((r) => JSON.stringify({ custom_id: r.custom_id, method: 'POST', url: '/v1/messages', body: r.params })).join('\n') + '\n'
    // The requests become the batch's input file, kept in its folder alone (no file of the key's lists them).
    const dir = await mkdtemp(join(app.config.dataDir, 'batches', 'upload-'))
    try {
      const input = join(dir, 'input.jsonl')
      await writeFile(input, lines)
      return messageBatch(await createBatch(app, request, { inputPath: input, endpoint: '/v1/messages', window: '24h', metadata: null, api: 'anthropic' }), request)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  app.get('/v1/messages/batches', { config: { scope: 'infer' }, schema: { querystring: ListQuery } }, async (request) => {
    const owner = ownerOf(request)
    const mine = [...app.batches.records.values()].filter((r) => r.owner === owner && r.api === 'anthropic')
      .map((r) => app.batches.runner.live(r.batch.id) ?? r).sort((a, b) => b.batch.created_at - a.batch.created_at || (a.batch.id < b.batch.id ? 1 : -1))
    const { after_id: after, before_id: before } = request.query
    const limit = Math.min(Number(request.query.limit ?? 20), 1000)
    let start = 0
    if (after !== undefined) start = mine.findIndex((r) => toAnthropic(r.batch.id) === after) + 1
    let list = mine.slice(start)
    if (before !== undefined) list = list.slice(0, Math.max(0, list.findIndex((r) => toAnthropic(r.batch.id) === before)))
    const data = list.slice(0, limit).map((r) => messageBatch(r, request))
    return { data, has_more: list.length > limit, first_id: (data[0]?.id as string | undefined) ?? null, last_id: (data.at(-1)?.id as string | undefined) ?? null }
  })

  app.get('/v1/messages/batches/:id', { config: { scope: 'infer' }, schema: { params: Params } }, async (request) => {
    return messageBatch(own(request, request.params.id), request)
  })

  app.post('/v1/messages/batches/:id/cancel', { config: { scope: 'infer' }, schema: { params: Params } }, async (request) => {
    return messageBatch(await app.batches.runner.cancel(own(request, request.params.id)), request)
  })

  app.get('/v1/messages/batches/:id/results', { config: { scope: 'infer' }, schema: { params: Params } }, async (request, reply) => {
    const record = own(request, request.params.id)
    if (record.batch.output_file_id === null && record.batch.error_file_id === null && !['completed', 'cancelled', 'expired', 'failed'].includes(record.batch.status)) {
      throw new BadRequestError(`message batch ${request.params.id} is still in progress: its results come once it has ended`, 'invalid_request_error')
    }
    const paths = [record.batch.output_file_id, record.batch.error_file_id].filter((id): id is string => id !== null).map((id) => app.batchFiles.dataPath(id))
    reply.type('application/binary')
    return reply.send(Readable.from(resultLines(paths)))
  })
}

/** The results, line by line, in Anthropic's shape. */
async function * resultLines (paths: string[]): AsyncGenerator<string> {
  for (const path of paths) {
    let rest = ''
    for await (const chunk of createReadStream(path, { encoding: 'utf8' })) {
      rest += chunk as string
      let nl
      while ((nl = rest.indexOf('\n')) !== -1) {
        const line = rest.slice(0, nl)
        rest = rest.slice(nl + 1)
        if (line !== '') yield `${JSON.stringify(anthropicResult(JSON.parse(line)))}\n`
      }
    }
  }
}

export default messageBatchesRoutes
