import { rm } from 'node:fs/promises'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { BadRequestError } from '../../core/base/errors.js'
import { clientGone, EventStream, streamFormatOf } from '../../core/server/event-stream.js'
import { ModelOrName, parseModelName, requestedModel } from '../../core/base/model-name.js'
import { OptionsSchema } from '../../core/config/options-schema.js'
import { checkModelFileName, inheritSettings, type LocalFile, type ModelSettings } from '../storage/model-creation.js'
import type { ModelRecord } from '../storage/model-record.js'

// Ollama's JSON form of create. `adapters` and `messages` are read so that they can be refused by name rather
// than dropped.
const CreateBody = ModelOrName({
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
})

// llama-server renders Jinja chat templates; Ollama's Go templates (`{{ .Prompt }}`) would render as text.
const GO_TEMPLATE = /\{\{-?\s*(\.|(if|range|with)\s+\.)/

// llama-server gets a template as one argument, which Linux caps at 128 KiB; real chat templates are a few KiB.
const MAX_TEMPLATE_BYTES = 64 * 1024

/**
 * `POST /api/create`: a model from a local one (`from`) or from uploaded GGUF blobs (`files`), with its own
 * system prompt, default options and chat template, optionally quantized; streamed status as Ollama's clients
 * read it, or one answer. Everything is checked before the answer starts, so that a bad request gets its
 * real status rather than an error event in a 200 stream.
 */
const create: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/create', { config: { scope: 'manage' }, schema: { body: CreateBody } }, async (request, reply) => {
    const body = request.body
    const name = requestedModel(body)
    parseModelName(name)
    for (const field of ['adapters', 'messages'] as const) {
      if (body[field] !== undefined) throw new BadRequestError(`"${field}" is not supported by /api/create yet`, 'unsupported_field')
    }
    if (body.template !== undefined && GO_TEMPLATE.test(body.template)) {
      throw new BadRequestError('"template" is an Ollama (Go) template; llamagate passes templates to llama-server, which reads Jinja chat templates (the GGUF\'s tokenizer.chat_template format)', 'unsupported_template')
    }
    // A larger one left a model that could never start ("Argument list too long").
    if (body.template !== undefined && Buffer.byteLength(body.template) > MAX_TEMPLATE_BYTES) {
      throw new BadRequestError(`"template" is ${Math.ceil(Buffer.byteLength(body.template) / 1024)} KiB: at most ${MAX_TEMPLATE_BYTES / 1024} KiB`, 'template_too_large')
    }
    if ((body.from === undefined) === (body.files === undefined)) throw new BadRequestError('give either "from" (a local model) or "files" (uploaded GGUF blobs), not both or neither')
    const { store } = app
    // Kept as written (Ollama's num_predict stays num_predict): the options pipeline reads it as max_tokens.
    const settings: ModelSettings = { system: body.system, template: body.template, ...(body.parameters ? { parameters: body.parameters } : {}) }
    const source = body.from !== undefined ? store.get(body.from) : null
    const files = await Promise.all(Object.entries(body.files ?? {}).map(([file, digest]) => {
      checkModelFileName(file)
      return store.blobs.fileFor(file, digest)
    }))
    if (body.quantize !== undefined) return createQuantized(request, reply, { name, quantize: body.quantize, stream: body.stream !== false, source, files, settings })
    // Without quantize a create only links files already on this disk: done before the answer starts.
    if (source !== null) await store.createFrom(name, source.name, settings)
    else await store.createFromFiles(name, files, settings)
    if (body.stream === false) return { status: 'success' }
    const stream = new EventStream(request, reply, streamFormatOf(request))
    stream.send({ status: source !== null ? `using model ${source.name}` : 'using uploaded files' })
    stream.send({ status: `writing manifest for ${name}` })
    stream.send({ status: 'success' })
    stream.end()
    return reply
  })
}

interface QuantizeJob {
  name: string
  quantize: string
  stream: boolean
  source: ModelRecord | null
  files: LocalFile[]
  settings: ModelSettings
}

/**
 * `quantize`: the GGUF of `from` (or the one uploaded in `files`) through llama-quantize, written next to the
 * blobs (on the models' file system, so the model links it), then made a model of like an upload; the
 * temporary file goes once the model holds its link (or the create failed). Progress streams as llama-quantize runs; what is refused
 * before it starts (the type, the tool) still gets a real status.
 */
async function createQuantized (request: FastifyRequest, reply: FastifyReply, job: QuantizeJob): Promise<unknown> {
  const { store, converter } = request.server
  let input: string
  if (job.source !== null) {
    const path = store.ggufPath(job.source)
    if (path === null) throw new BadRequestError(`model "${job.source.name}" has no GGUF to quantize yet`)
    input = path
  } else {
    if (job.files.length !== 1) throw new BadRequestError('"quantize" takes "from" (a local model) or "files" with one GGUF blob')
    input = job.files[0]!.path
  }
  const stream = job.stream ? new EventStream(request, reply, streamFormatOf(request)) : null
  const temporary = store.blobs.temporaryPath()
  try {
    const made = await converter.quantizeGguf({
      source: input, dtype: job.quantize, target: temporary, signal: stream?.signal ?? clientGone(reply),
      onProgress: (p) => { stream?.send({ status: p.status, ...(p.total !== undefined ? { total: p.total, completed: p.completed } : {}) }) },
    })
    const file = { name: `${parseModelName(job.name).name}-${made.dtype}.gguf`, path: made.file, sha256: made.sha256 }
    await store.createFromFiles(job.name, [file], inheritSettings(job.source?.manifest ?? null, job.settings))
    // Gone before the client hears "success": the model holds its own link to the bytes.
    await rm(temporary, { force: true })
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

export default create
