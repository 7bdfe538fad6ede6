import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../../core/errors.js'
import { Type } from 'typebox'
import { AnthropicModel, AnthropicModelList, OpenAiModel, OpenAiModelList, TagsReply } from './schemas.js'
import { anthropicModel, openAiModel, tagOf } from './tag-shape.js'

/** The models listed: Ollama's /api/tags, OpenAI's /v1/models and /v1/models/{id}. */
const tags: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.get('/api/tags', { schema: { response: { 200: TagsReply } } }, async () => ({ models: store.list().map(tagOf) }))

  // One path for two APIs: Anthropic's SDKs (and Claude Code) send `anthropic-version`, OpenAI's never do.
  const anthropic = (headers: Record<string, unknown>): boolean => headers['anthropic-version'] !== undefined

  app.get('/v1/models', { schema: { response: { 200: Type.Union([OpenAiModelList, AnthropicModelList]) } } }, async (request) => {
    if (!anthropic(request.headers)) return { object: 'list' as const, data: store.list().map(openAiModel) }
    const data = store.list().map(anthropicModel)
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
  })

  // Model ids hold a slash (`owner/name`): a wildcard route takes both parts. Fastify has decoded the
  // path already (decoding again would turn `%252e` into `.`).
  app.get('/v1/models/*', { schema: { response: { 200: Type.Union([OpenAiModel, AnthropicModel]) } } }, async (request) => {
    const id = (request.params as { '*': string })['*']
    const record = store.find(id)
    if (!record) throw new NotFoundError(`model "${id}" not found`)
    return anthropic(request.headers) ? anthropicModel(record) : openAiModel(record)
  })
}

export default tags
