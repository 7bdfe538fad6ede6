import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { BadRequestError } from '../../core/errors.js'
import { EventStream, negotiateStreamFormat } from '../../core/event-stream.js'
import { parseModelName, requestedModel } from '../../core/model-name.js'
import { OptionsSchema } from '../../core/options-schema.js'
import { normalizeRequestOptions } from '../../core/request-options.js'

// Ollama's JSON form of create. `template`, `quantize`, `adapters` and `messages` are read so that they can be
// refused by name rather than dropped.
const CreateBody = Type.Object({
  model: Type.Optional(Type.String({ minLength: 1 })),
  name: Type.Optional(Type.String({ minLength: 1 })),
  from: Type.Optional(Type.String({ minLength: 1 })),
  files: Type.Optional(Type.Record(Type.String(), Type.String())),
  system: Type.Optional(Type.String()),
  parameters: Type.Optional(OptionsSchema),
  template: Type.Optional(Type.String()),
  quantize: Type.Optional(Type.String()),
  adapters: Type.Optional(Type.Record(Type.String(), Type.String())),
  messages: Type.Optional(Type.Array(Type.Object({}))),
  license: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  stream: Type.Optional(Type.Boolean()),
}, { anyOf: [{ required: ['model'] }, { required: ['name'] }] })

/**
 * `POST /api/create`: a model from a local one (`from`) or from uploaded GGUF blobs (`files`), with its own
 * `system` prompt and default `parameters`; streamed status as Ollama's clients read it, or one answer.
 */
const create: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/create', { schema: { body: CreateBody } }, async (request, reply) => {
    const body = request.body
    const name = requestedModel(body)
    parseModelName(name)
    for (const field of ['template', 'quantize', 'adapters', 'messages'] as const) {
      if (body[field] !== undefined) {
        throw new BadRequestError(`"${field}" is not supported by /api/create yet: llamagate uses the GGUF's own chat template, and quantizes only models pulled as SafeTensors (options.dtype)`, 'unsupported_field')
      }
    }
    // A create links files already on this disk, in well under a second: it is done before the answer starts,
    // so that a bad request gets its real status rather than an error event in a 200 stream.
    // Ollama's num_predict is the contract's max_tokens, in a model's parameters as in a request's options.
    const record = await app.store.create({ name, from: body.from, files: body.files, system: body.system, parameters: normalizeRequestOptions(body.parameters) })
    if (body.stream === false) return { status: 'success' }
    const stream = new EventStream(request, reply, negotiateStreamFormat(request.headers.accept, app.config.streamFormat))
    stream.send({ status: body.from !== undefined ? `using model ${body.from}` : 'using uploaded files' })
    stream.send({ status: `writing manifest for ${record.name}` })
    stream.send({ status: 'success' })
    stream.end()
    return reply
  })
}

export default create
