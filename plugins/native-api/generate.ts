import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError } from '../../core/errors.js'
import { withImages } from '../inference/images.js'
import { loadForm } from '../inference/load-form.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import { runNative } from './native-run.js'
import { responseFormat } from './response-format.js'
import { GenerateBody } from './schemas.js'
import { thinkFields } from './think-fields.js'

const generate: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/generate', { config: { scope: 'infer' }, schema: { body: GenerateBody } }, async (request, reply) => {
    const body = request.body
    const prompt = body.prompt ?? ''
    if (prompt === '') {
      // Ollama's forms: an empty prompt loads the model; with keep_alive 0 it unloads it.
      const { model, doneReason } = await loadForm(app.leases, { get: (name) => requestRecord(app, name) }, { model: body.model, options: body.options, keepAlive: body.keep_alive, log: request.log, usage: request.usage })
      return { model, created_at: new Date().toISOString(), response: '', done: true, done_reason: doneReason }
    }
    const record = requestRecord(app, body.model)
    const format = responseFormat(body.format)
    // Like Ollama, a prompt goes through the model's chat template unless `raw` asks for it verbatim.
    const templated = body.raw !== true
    const images = app.images.parts(record, body.images, 'the request')
    // A raw prompt would need the runtime's own media markers where each image goes: not a form clients use.
    if (!templated && images.length > 0) throw new BadRequestError('images need the chat template: send them without "raw": true', 'images_not_supported')
    return runNative(app.leases, request, reply, {
      kind: 'generate',
      model: body.model,
      endpoint: templated ? 'chat' : 'completion',
      stream: body.stream ?? true,
      options: body.options,
      keepAlive: body.keep_alive,
      body: templated
        ? {
            // The request's system prompt, else the one the model was created with.
            messages: withModelSystem(record, [...(body.system ? [{ role: 'system', content: body.system }] : []), { role: 'user', content: withImages(prompt, images) }]),
            ...(format ? { response_format: format } : {}),
            ...thinkFields(record, body.think),
          }
        : { prompt, ...(format ? { json_schema: format.type === 'json_object' ? { type: 'object' } : (format.json_schema as { schema: unknown }).schema } : {}) },
    })
  })
}

export default generate
