import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { NotFoundError } from '../../core/errors.js'
import { parseModelName } from '../../core/model-name.js'
import type { ModelRecord } from '../storage/model-store.js'
import { ImportBody, ModelBody, ModelRecordSchema, OpenAiModel, OpenAiModelList, TagsReply } from './schemas.js'

function tagOf (r: ModelRecord) {
  return { name: r.name, model: r.model, size: r.size, format: r.format, modified_at: r.modified_at, digest: r.digest, details: r.details }
}

function openAiModel (r: ModelRecord) {
  return { id: r.name, object: 'model' as const, created: Math.floor(Date.parse(r.modified_at) / 1000), owned_by: r.name.split('/')[0]! }
}

/** The model-record surfaces: /api/tags, /api/show, /api/delete, /api/import, /v1/models. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.get('/api/tags', { schema: { response: { 200: TagsReply } } }, async () => ({ models: store.list().map(tagOf) }))

  app.post('/api/show', {
    schema: { body: ModelBody, response: { 200: Type.Object({ modelfile: Type.String(), details: ModelRecordSchema, model_info: Type.Record(Type.String(), Type.Unknown()), template: Type.String(), modified_at: Type.String() }) } },
  }, async (request) => {
    const record = store.get(request.body.model)
    const g = record.gguf
    return {
      modelfile: '',
      details: tagOf(record),
      template: g?.chat_template ?? '',
      modified_at: record.modified_at,
      model_info: g
        ? {
            'general.architecture': g.architecture,
            'general.parameter_count': g.parameter_count,
            'general.file_type': g.file_type,
            [`${g.architecture}.context_length`]: g.context_length,
            [`${g.architecture}.block_count`]: g.block_count,
            [`${g.architecture}.embedding_length`]: g.embedding_length,
            [`${g.architecture}.attention.head_count`]: g.head_count,
            [`${g.architecture}.attention.head_count_kv`]: g.head_count_kv,
            'tokenizer.chat_template': g.chat_template,
          }
        : {},
    }
  })

  app.delete('/api/delete', { schema: { body: ModelBody, response: { 200: Type.Object({ status: Type.Literal('deleted') }) } } }, async (request) => {
    await store.delete(request.body.model)
    return { status: 'deleted' as const }
  })

  app.post('/api/import', { schema: { body: ImportBody, response: { 200: ModelRecordSchema } } }, async (request) => {
    parseModelName(request.body.model)
    return tagOf(await store.import(request.body.model, request.body.path))
  })

  app.get('/v1/models', { schema: { response: { 200: OpenAiModelList } } }, async () => ({ object: 'list' as const, data: store.list().map(openAiModel) }))

  // Model ids hold a slash (`owner/name`): a wildcard route takes both parts (Ollama's single-segment route cannot).
  app.get('/v1/models/*', { schema: { response: { 200: OpenAiModel } } }, async (request) => {
    const id = decodeURIComponent((request.params as { '*': string })['*'])
    const record = store.find(id)
    if (!record) throw new NotFoundError(`model "${id}" not found`)
    return openAiModel(record)
  })
}

export default routes
