import { createReadStream } from 'node:fs'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { BadRequestError, GatewayError } from '../../core/base/errors.js'
import type { FileStore } from './file-store.js'
import { FileListQuery, IdParams, limitOf } from './schemas.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Batch APIs' files (plugins/batches). */
    batchFiles: FileStore
  }
}

/** Whose a request's files and batches are: its key's name; null while keys are off (one owner for everyone). */
export const ownerOf = (request: FastifyRequest): string | null => request.grant?.name ?? null

/** The purposes an upload may have: the Batch API's input. */
const PURPOSES = ['batch']

/**
 * OpenAI's `/v1/files` for the Batch APIs: upload (multipart, `purpose: batch`), list, retrieve, content, delete,
 * each a key's own (another key's file is not found, whatever its id). Uploads are held to limits.batch_file_size,
 * and a key's files together to limits.batch_files_per_key.
 */
const filesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const files = app.batchFiles
  const { batchFileBytes } = app.config.limits
  await app.register(multipart, { limits: { files: 1, fileSize: batchFileBytes, fields: 8, fieldSize: 1024, parts: 10, headerPairs: 100 } })
  app.setErrorHandler((err) => {
    const code = (err as { code?: unknown }).code
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw new GatewayError(413, `the file is larger than limits.batch_file_size (${batchFileBytes} bytes)`, { code: 'file_too_large' })
    if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') throw new BadRequestError('an upload is a multipart/form-data body with "file" and "purpose"', 'invalid_request')
    if (typeof code === 'string' && code.startsWith('FST_')) throw new BadRequestError(`the multipart/form-data body is refused: ${(err as Error).message}`, 'invalid_request')
    throw err
  })

  app.post('/v1/files', { config: { scope: 'infer' } }, async (request) => {
    if (!request.isMultipart()) throw new BadRequestError('an upload is a multipart/form-data body with "file" and "purpose"', 'invalid_request')
    let purpose: string | undefined
    let upload: { filename: string, content: Buffer } | undefined
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') throw new BadRequestError(`unexpected file field "${part.fieldname}": the upload is the "file" field`, 'invalid_request')
        upload = { filename: part.filename.slice(0, 255), content: await part.toBuffer() }
      } else if (part.fieldname === 'purpose') {
        purpose = String(part.value)
      }
    }
    if (upload === undefined) throw new BadRequestError('the upload has no "file" field', 'invalid_request')
    if (purpose === undefined || !PURPOSES.includes(purpose)) throw new BadRequestError(`purpose must be one of ${PURPOSES.join(', ')}: this server keeps files for batches only`, 'invalid_purpose')
    return await files.add(ownerOf(request), upload.filename, purpose, upload.content)
  })

  app.get('/v1/files', { config: { scope: 'infer' }, schema: { querystring: FileListQuery } }, async (request) => {
    const { purpose, limit, after, order = 'desc' } = request.query
    return page(files.list(ownerOf(request), purpose), order, limitOf(limit, 10_000, 10_000), after)
  })

  app.get('/v1/files/:id', { config: { scope: 'infer' }, schema: { params: IdParams } }, async (request) => {
    return files.get(ownerOf(request), request.params.id).file
  })

  app.get('/v1/files/:id/content', { config: { scope: 'infer' }, schema: { params: IdParams } }, async (request, reply) => {
    const { file } = files.get(ownerOf(request), request.params.id)
    reply.type('application/octet-stream').header('content-length', file.bytes)
    return reply.send(createReadStream(files.dataPath(file.id)))
  })

  app.delete('/v1/files/:id', { config: { scope: 'infer' }, schema: { params: IdParams } }, async (request) => {
    await files.delete(ownerOf(request), request.params.id)
    return { id: request.params.id, object: 'file', deleted: true }
  })
}

/** One page of a list, OpenAI's way: `after` an id, newest first unless `order: asc`. */
export function page<T extends { id: string, created_at: number }> (items: T[], order: 'asc' | 'desc', limit: number, after?: string): { object: 'list', data: T[], first_id: string | null, last_id: string | null, has_more: boolean } {
  const sorted = [...items].sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1))
  if (order === 'desc') sorted.reverse()
  const start = after === undefined ? 0 : sorted.findIndex((i) => i.id === after) + 1
  const data = sorted.slice(start, start + limit)
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < sorted.length }
}

export default filesRoutes
