import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../../core/errors.js'
import { openAiModel, tagOf } from './tag-shape.js'
import { OpenAiModel, OpenAiModelList, TagsReply } from './schemas.js'

/** The models listed: Ollama's /api/tags, OpenAI's /v1/models and /v1/models/{id}. */
const tags: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.get('/api/tags', { schema: { response: { 200: TagsReply } } }, async () => ({ models: store.list().map(tagOf) }))

  app.get('/v1/models', { schema: { response: { 200: OpenAiModelList } } }, async () => ({ object: 'list' as const, data: store.list().map(openAiModel) }))

  // Model ids hold a slash (`owner/name`): a wildcard route takes both parts. Fastify has decoded the
  // path already (decoding again would turn `%252e` into `.`).
  app.get('/v1/models/*', { schema: { response: { 200: OpenAiModel } } }, async (request) => {
    const id = (request.params as { '*': string })['*']
    const record = store.find(id)
    if (!record) throw new NotFoundError(`model "${id}" not found`)
    return openAiModel(record)
  })
}

export default tags
