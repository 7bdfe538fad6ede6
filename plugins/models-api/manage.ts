import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { requestedModel } from '../../core/base/model-name.js'
import { tagOf } from './tag-shape.js'
import { CopyBody, CopyReply, DeleteReply, ImportBody, ModelOrNameBody, ModelRecordSchema } from './schemas.js'

/** The routes that change the store's records: /api/delete, /api/copy, /api/import. */
const manage: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.delete('/api/delete', { config: { scope: 'manage' }, schema: { body: ModelOrNameBody, response: { 200: DeleteReply } } }, async (request) => {
    await store.delete(requestedModel(request.body))
    return { status: 'deleted' as const }
  })

  // Ollama answers an empty 200; its clients read no body, and a JSON one keeps this surface uniform.
  app.post('/api/copy', { config: { scope: 'manage' }, schema: { body: CopyBody, response: { 200: CopyReply } } }, async (request) => {
    await store.copy(request.body.source, request.body.destination)
    return { status: 'copied' as const }
  })

  app.post('/api/import', { config: { scope: 'manage' }, schema: { body: ImportBody, response: { 200: ModelRecordSchema } } }, async (request) => {
    const { model, path, projector } = request.body
    return tagOf(await store.import(model, path, projector !== undefined ? { projector } : {}))
  })
}

export default manage
