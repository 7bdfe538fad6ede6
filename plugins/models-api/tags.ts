import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../../core/errors.js'
import { Type } from 'typebox'
import { AnthropicModel, AnthropicModelList, OpenAiModel, OpenAiModelList, TagsReply } from './schemas.js'
import type { ModelRecord } from '../storage/model-record.js'
import { anthropicModel, openAiModel, tagOf } from './tag-shape.js'

/** The models listed: Ollama's /api/tags, OpenAI's /v1/models and /v1/models/{id}. */
const tags: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.get('/api/tags', { config: { scope: 'any', modelList: { field: 'models', key: 'name' } }, schema: { response: { 200: TagsReply } } }, async () => ({ models: store.list().map(tagOf) }))

  // One path for two APIs: Anthropic's SDKs (and Claude Code) send `anthropic-version`, OpenAI's never do.
  const anthropic = (headers: Record<string, unknown>): boolean => headers['anthropic-version'] !== undefined

  // The models, then each alias of a stored model under its own name (clients pick from this list by name).
  const listed = (): ModelRecord[] => [
    ...store.list(),
    ...Object.keys(store.aliases).flatMap((alias) => {
      const record = store.find(alias)
      return record === null || record.name.toLowerCase() === alias ? [] : [{ ...record, name: alias }]
    }),
  ]

  app.get('/v1/models', { config: { scope: 'any', modelList: { field: 'data', key: 'id' } }, schema: { response: { 200: Type.Union([OpenAiModelList, AnthropicModelList]) } } }, async (request) => {
    if (!anthropic(request.headers)) return { object: 'list' as const, data: listed().map(openAiModel) }
    const data = listed().map(anthropicModel)
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
  })

  // Model ids hold a slash (`owner/name`): a wildcard route takes both parts. Fastify has decoded the
  // path already (decoding again would turn `%252e` into `.`).
  app.get('/v1/models/*', { config: { scope: 'any' }, schema: { response: { 200: Type.Union([OpenAiModel, AnthropicModel]) } } }, async (request) => {
    const id = (request.params as { '*': string })['*']
    const record = store.find(id)
    if (!record) throw new NotFoundError(`model "${id}" not found`)
    // Asked by an alias, answered under it.
    const named = { ...record, name: Object.hasOwn(store.aliases, id.toLowerCase()) && record.name.toLowerCase() !== id.toLowerCase() ? id : record.name }
    return anthropic(request.headers) ? anthropicModel(named) : openAiModel(named)
  })
}

export default tags
