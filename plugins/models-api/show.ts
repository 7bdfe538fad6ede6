import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { requestedModel } from '../../core/base/model-name.js'
import { modelOptions } from '../../core/config/request-options.js'
import { modelFimTokens } from '../inference/fim-tokens.js'
import { capabilities, chatTemplate } from '../inference/model-capabilities.js'
import { ggufMetadata, modelInfo, parametersText } from './model-info.js'
import { remoteShow } from './remote-show.js'
import { ShowBody, ShowReply } from './schemas.js'
import { showDetails } from './tag-shape.js'

/** Ollama's /api/show: a model's details, metadata, template, parameters and capabilities; an upstream's model's too. */
const show: FastifyPluginAsyncTypebox = async (app) => {
  const { store, upstreams } = app

  app.post('/api/show', { config: { scope: 'any' }, schema: { body: ShowBody, response: { 200: ShowReply } } }, async (request) => {
    const name = requestedModel(request.body)
    const verbose = request.body.verbose === true
    // Null for a stored name: a stored model wins over an upstream's of its name.
    const remote = upstreams.find(name)
    if (remote !== null) return remoteShow(remote, parametersText(modelOptions(null, app.config.models.get(remote.name)?.options)), verbose)
    // An invalid name is a 400 and an unknown one a 404 (ModelNotFoundError), both from the store.
    const record = store.get(name)
    const info = await modelInfo(record, verbose)
    const license = licenseOf(info)
    return {
      modelfile: '',
      ...(license !== null ? { license } : {}),
      details: showDetails(record),
      model_info: info,
      template: chatTemplate(record),
      // The model's own (from /api/create), under config.yaml's, as requests get them.
      parameters: parametersText(modelOptions(record.parameters, app.config.models.get(record.name)?.options)),
      ...(record.system !== null ? { system: record.system } : {}),
      // Ollama's `insert` (`suffix`): the FIM tokens /api/generate frames a suffix with, found as llama.cpp finds them.
      capabilities: [...capabilities(record), ...(record.kind === 'chat' && await modelFimTokens(record) !== null ? ['insert'] : [])],
      ...(record.projector !== null ? { projector_info: await ggufMetadata(`${record.dir}/${record.projector}`, verbose) } : {}),
      modified_at: record.modified_at,
    }
  })
}

/** The GGUF's `general.license` (a name such as `apache-2.0`, or the text), as Ollama's `license`; null when none. */
function licenseOf (info: Record<string, unknown>): string | null {
  const value = info['general.license']
  if (typeof value === 'string' && value !== '') return value
  return Array.isArray(value) && value.length > 0 ? value.map(String).join('\n') : null
}

export default show
