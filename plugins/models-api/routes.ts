import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../../core/errors.js'
import { requestedModel } from '../../core/model-name.js'
import { modelOptions } from '../../core/request-options.js'
import { capabilities, chatTemplate } from '../inference/model-capabilities.js'
import { ggufMetadata, modelInfo, parametersText } from './show.js'
import { openAiModel, showDetails, tagOf } from './tag-shape.js'
import { CopyBody, CopyReply, DeleteReply, ImportBody, ModelOrNameBody, ShowBody, ModelRecordSchema, OpenAiModel, OpenAiModelList, ShowReply, TagsReply } from './schemas.js'

/** The model-record surfaces: /api/tags, /api/show, /api/copy, /api/delete, /api/import, /v1/models. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app

  app.get('/api/tags', { schema: { response: { 200: TagsReply } } }, async () => ({ models: store.list().map(tagOf) }))

  app.post('/api/show', { schema: { body: ShowBody, response: { 200: ShowReply } } }, async (request) => {
    // An invalid name is a 400 and an unknown one a 404 (ModelNotFoundError), both from the store.
    const record = store.get(requestedModel(request.body))
    return {
      modelfile: '',
      details: showDetails(record),
      model_info: await modelInfo(record, request.body.verbose === true),
      template: chatTemplate(record),
      // The model's own (from /api/create), under config.yaml's, as requests get them.
      parameters: parametersText(modelOptions(record.parameters, app.config.models[record.name]?.options)),
      ...(record.system !== null ? { system: record.system } : {}),
      capabilities: capabilities(record),
      ...(record.projector !== null ? { projector_info: await ggufMetadata(`${record.dir}/${record.projector}`, request.body.verbose === true) } : {}),
      modified_at: record.modified_at,
    }
  })

  app.delete('/api/delete', { schema: { body: ModelOrNameBody, response: { 200: DeleteReply } } }, async (request) => {
    await store.delete(requestedModel(request.body))
    return { status: 'deleted' as const }
  })

  // Ollama answers an empty 200; its clients read no body, and a JSON one keeps this surface uniform.
  app.post('/api/copy', { schema: { body: CopyBody, response: { 200: CopyReply } } }, async (request) => {
    await store.copy(request.body.source, request.body.destination)
    return { status: 'copied' as const }
  })

  app.post('/api/import', { schema: { body: ImportBody, response: { 200: ModelRecordSchema } } }, async (request) => {
    const { model, path, projector } = request.body
    return tagOf(await store.import(model, path, projector !== undefined ? { projector } : {}))
  })

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

export default routes
