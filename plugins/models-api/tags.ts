import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { InvalidModelNameError, NotFoundError } from '../../core/base/errors.js'
import { Type } from 'typebox'
import { AnthropicModel, AnthropicModelList, OpenAiModel, OpenAiModelList, TagsReply } from './schemas.js'
import type { ModelRecord } from '../storage/model-record.js'
import { anthropicModel, anthropicRemoteModel, modelCard, openAiModel, openAiRemoteModel, remoteTag, tagOf } from './tag-shape.js'

/** The models listed: Ollama's /api/tags, OpenAI's /v1/models and /v1/models/{id}. */
const tags: FastifyPluginAsyncTypebox = async (app) => {
  const { store, upstreams, scheduler } = app
  const windowOf = (r: ModelRecord) => scheduler.contextWindow(r.name)
  // config.yaml's upstreams' models that answer now, after the stored ones (keys' model patterns filter both alike).
  const remote = () => upstreams.list().filter((m) => m.healthy)
  // The stored model, or null where none is; an upstream's name (`back/owner/name`) is no stored model's.
  const storedOrNull = (id: string): ModelRecord | null => {
    try {
      return store.find(id)
    } catch (err) {
      if (err instanceof InvalidModelNameError && upstreams.find(id) !== null) return null
      throw err
    }
  }

  app.get('/api/tags', { config: { scope: 'any', modelList: { field: 'models', key: 'name' } }, schema: { response: { 200: TagsReply } } }, async () => ({
    models: [...store.list().map(tagOf), ...remote().map(remoteTag)],
  }))

  // One path for two APIs: Anthropic's SDKs (and Claude Code) send `anthropic-version`, OpenAI's never do.
  const anthropic = (headers: Record<string, unknown>): boolean => headers['anthropic-version'] !== undefined

  // The models, then each alias of a stored model under its own name (clients pick from this list by name).
  const listed = (): ModelRecord[] => [
    ...store.list(),
    ...[...store.aliases.keys()].flatMap((alias) => {
      const record = store.find(alias)
      return record === null || record.name.toLowerCase() === alias ? [] : [{ ...record, name: alias }]
    }),
  ]

  app.get('/v1/models', { config: { scope: 'any', modelList: { field: 'data', key: 'id', alsoFields: ['models'] } }, schema: { response: { 200: Type.Union([OpenAiModelList, AnthropicModelList]) } } }, async (request) => {
    if (!anthropic(request.headers)) {
      const stored = listed()
      return { object: 'list' as const, data: [...stored.map((r) => openAiModel(r, windowOf(r))), ...remote().map(openAiRemoteModel)], models: stored.map(modelCard) }
    }
    const data = [...listed().map((r) => anthropicModel(r, windowOf(r))), ...remote().map(anthropicRemoteModel)]
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
  })

  // Model ids hold a slash (`owner/name`): a wildcard route takes both parts. Fastify has decoded the
  // path already (decoding again would turn `%252e` into `.`).
  app.get('/v1/models/*', { config: { scope: 'any' }, schema: { response: { 200: Type.Union([OpenAiModel, AnthropicModel]) } } }, async (request) => {
    const id = (request.params as { '*': string })['*']
    const record = storedOrNull(id)
    if (!record) {
      const found = upstreams.find(id)
      if (found === null) throw new NotFoundError(`model "${id}" not found`)
      return anthropic(request.headers) ? anthropicRemoteModel(found) : openAiRemoteModel(found)
    }
    // Asked by an alias, answered under it.
    const named = { ...record, name: store.aliases.has(id.toLowerCase()) && record.name.toLowerCase() !== id.toLowerCase() ? id : record.name }
    return anthropic(request.headers) ? anthropicModel(named, windowOf(record)) : openAiModel(named, windowOf(record))
  })
}

export default tags
