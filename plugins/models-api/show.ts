import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { InvalidModelNameError, ModelNotFoundError } from '../../core/errors.js'
import { requestedModel } from '../../core/model-name.js'
import { modelOptions } from '../../core/request-options.js'
import { capabilities, chatTemplate } from '../inference/model-capabilities.js'
import { ggufMetadata, modelInfo, parametersText } from './model-info.js'
import type { ModelRecord } from '../storage/model-record.js'
import { remoteShow } from './remote-show.js'
import { ShowBody, ShowReply } from './schemas.js'
import { showDetails } from './tag-shape.js'

/** Ollama's /api/show: a model's details, metadata, template, parameters and capabilities; an upstream's model's too. */
const show: FastifyPluginAsyncTypebox = async (app) => {
  const { store, upstreams } = app
  // The stored model, or null where an upstream offers the name and none is stored (a stored model wins).
  const storedOrNull = (name: string): ModelRecord | null => {
    try {
      return store.get(name)
    } catch (err) {
      if ((err instanceof ModelNotFoundError || err instanceof InvalidModelNameError) && upstreams.find(name) !== null) return null
      throw err
    }
  }

  app.post('/api/show', { config: { scope: 'any' }, schema: { body: ShowBody, response: { 200: ShowReply } } }, async (request) => {
    const name = requestedModel(request.body)
    const verbose = request.body.verbose === true
    // An invalid name is a 400 and an unknown one a 404 (ModelNotFoundError), both from the store, unless an upstream offers it.
    const record = storedOrNull(name)
    if (record === null) {
      const remote = upstreams.find(name)!
      return remoteShow(remote, parametersText(modelOptions(null, app.config.models[remote.name]?.options)), verbose)
    }
    return {
      modelfile: '',
      details: showDetails(record),
      model_info: await modelInfo(record, verbose),
      template: chatTemplate(record),
      // The model's own (from /api/create), under config.yaml's, as requests get them.
      parameters: parametersText(modelOptions(record.parameters, app.config.models[record.name]?.options)),
      ...(record.system !== null ? { system: record.system } : {}),
      capabilities: capabilities(record),
      ...(record.projector !== null ? { projector_info: await ggufMetadata(`${record.dir}/${record.projector}`, verbose) } : {}),
      modified_at: record.modified_at,
    }
  })
}

export default show
