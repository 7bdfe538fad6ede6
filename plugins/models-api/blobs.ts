import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Readable } from 'node:stream'
import { Type } from 'typebox'
import { dropRest } from './drop-rest.js'

const BlobParams = Type.Object({ digest: Type.String() })
// Long enough for a client still sending to hear a refusal and stop; a client sending on regardless is cut there.
const LINGER_MS = 5000

/**
 * Ollama's blob uploads, ahead of `/api/create`: `HEAD /api/blobs/sha256:<hex>` says whether the server has it
 * (200, or 404), `POST` sends it (201 stored, 200 already there, 400 when the bytes do not hash to the digest,
 * 507 when the disk cannot hold it or it would pass limits.blob_quota), `DELETE` removes it (models made from it
 * keep their bytes). Blobs no model holds go by themselves after limits.unused_blob_ttl (plugins/storage).
 * Registered in a scope of its own: its body is the file itself, streamed to disk, not JSON read into memory
 * (and not held to limits.body_size: a model is gigabytes).
 */
const blobs: FastifyPluginAsyncTypebox = async (app) => {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, payload, done) => { done(null, payload) })

  app.head('/api/blobs/:digest', { config: { scope: 'manage' }, schema: { params: BlobParams } }, async (request, reply) => {
    const found = await app.store.blobs.find(request.params.digest)
    return reply.code(found === null ? 404 : 200).send()
  })

  // An upload is gigabytes: exempt from limits.body_timeout (core/server/body-timeout.ts).
  app.post('/api/blobs/:digest', { config: { scope: 'manage', longBody: true }, schema: { params: BlobParams } }, async (request, reply) => {
    const body = (request.body ?? request.raw) as Readable
    const declared = Number(request.headers['content-length'])
    try {
      const { created } = await app.store.blobs.put(request.params.digest, body, {
        ...(Number.isFinite(declared) && declared >= 0 ? { size: declared } : {}),
        quota: app.config.limits.blobQuota,
      })
      return reply.code(created ? 201 : 200).send()
    } catch (err) {
      // Refused before its end (the disk, the quota): the rest is dropped, for a moment only.
      dropRest(request.raw, LINGER_MS)
      throw err
    }
  })

  app.delete('/api/blobs/:digest', { config: { scope: 'manage' }, schema: { params: BlobParams } }, async (request, reply) => {
    await app.store.blobs.remove(request.params.digest)
    return reply.code(200).send()
  })
}

export default blobs
