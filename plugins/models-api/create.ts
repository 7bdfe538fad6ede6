import { rm } from 'node:fs/promises'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { clientGone } from '../../core/client-gone.js'
import { BadRequestError } from '../../core/errors.js'
import { EventStream, negotiateStreamFormat } from '../../core/event-stream.js'
import { parseModelName, requestedModel } from '../../core/model-name.js'
import { OptionsSchema } from '../../core/options-schema.js'
import { normalizeRequestOptions } from '../../core/request-options.js'

// Ollama's JSON form of create. `template`, `adapters` and `messages` are read so that they can be refused by
// name rather than dropped.
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
 * `quantize`: the GGUF of `from` (or the one uploaded in `files`) through llama-quantize, made in the blob
 * area and created from there like an upload; the blob's own name goes once the model holds the file. The
 * quantization's progress streams as it runs; anything refused before it starts gets a real status.
 */
async function createQuantized (request: FastifyRequest, reply: FastifyReply, body: Static<typeof CreateBody>, name: string): Promise<unknown> {
  const { store, converter, config } = request.server
  const source = body.from !== undefined ? store.get(body.from) : null
  let input: string | null
  if (source !== null) {
    if (body.files !== undefined) throw new BadRequestError('give either "from" (a local model) or "files" (uploaded GGUF blobs), not both')
    input = store.ggufPath(source)
    if (input === null) throw new BadRequestError(`model "${source.name}" has no GGUF to quantize yet`)
  } else {
    const entries = Object.entries(body.files ?? {})
    if (entries.length !== 1) throw new BadRequestError('"quantize" takes "from" (a local model) or "files" with one GGUF blob')
    input = await store.blobs.find(entries[0]![1])
    if (input === null) throw new BadRequestError(`blob ${entries[0]![1]} for ${entries[0]![0]} was not uploaded: POST it to /api/blobs/${entries[0]![1]} first`, 'blob_not_found')
  }
  const stream = body.stream === false ? null : new EventStream(request, reply, negotiateStreamFormat(request.headers.accept, config.streamFormat))
  const temporary = store.blobs.temporaryPath()
  try {
    const made = await converter.quantizeGguf({
      source: input, dtype: body.quantize!, target: temporary, signal: stream?.signal ?? clientGone(reply),
      onProgress: (p) => { stream?.send({ status: p.status, ...(p.total !== undefined ? { total: p.total, completed: p.completed } : {}) }) },
    })
    const digest = await store.blobs.adopt(made.file, made.sha256)
    try {
      await store.create({
        name,
        files: { [`${name.split('/')[1]}-${made.dtype}.gguf`]: digest },
        system: body.system ?? source?.system ?? undefined,
        template: body.template ?? source?.template ?? undefined,
        parameters: { ...source?.parameters, ...normalizeRequestOptions(body.parameters) },
      })
    } finally {
      await store.blobs.remove(digest)
    }
    if (stream === null) return { status: 'success' }
    stream.send({ status: 'writing manifest' })
    stream.send({ status: 'success' })
    stream.end()
  } catch (err) {
    if (stream === null) throw err
    stream.fail(err)
  } finally {
    await rm(temporary, { force: true })
  }
  return reply
}

/**
 * `POST /api/create`: a model from a local one (`from`) or from uploaded GGUF blobs (`files`), with its own
 * `system` prompt and default `parameters`; streamed status as Ollama's clients read it, or one answer.
 */
const create: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/create', { schema: { body: CreateBody } }, async (request, reply) => {
    const body = request.body
    const name = requestedModel(body)
    parseModelName(name)
    for (const field of ['adapters', 'messages'] as const) {
      if (body[field] !== undefined) throw new BadRequestError(`"${field}" is not supported by /api/create yet`, 'unsupported_field')
    }
    // llama-server renders Jinja chat templates; Ollama's Go templates (`{{ .Prompt }}`) would render as text.
    if (body.template !== undefined && /\{\{-?\s*(\.|(if|range|with)\s+\.)/.test(body.template)) {
      throw new BadRequestError('"template" is an Ollama (Go) template; llamagate passes templates to llama-server, which reads Jinja chat templates (the GGUF\'s tokenizer.chat_template format)', 'unsupported_template')
    }
    if (body.quantize !== undefined) return createQuantized(request, reply, body, name)
    // A create links files already on this disk, in well under a second: it is done before the answer starts,
    // so that a bad request gets its real status rather than an error event in a 200 stream.
    // Ollama's num_predict is the contract's max_tokens, in a model's parameters as in a request's options.
    const record = await app.store.create({ name, from: body.from, files: body.files, system: body.system, template: body.template, parameters: normalizeRequestOptions(body.parameters) })
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
