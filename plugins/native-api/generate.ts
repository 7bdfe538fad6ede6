import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError } from '../../core/base/errors.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { modelFimTokens } from '../inference/fim-tokens.js'
import { withImages } from '../inference/images.js'
import { loadForm } from '../inference/load-form.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import type { ModelRecord } from '../storage/model-record.js'
import { logprobsAsked } from './logprobs.js'
import { runNative } from './native-run.js'
import { responseFormat } from './response-format.js'
import { GenerateBody } from './schemas.js'
import { thinkFields } from './think-fields.js'

const generate: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/generate', { config: { scope: 'infer' }, schema: { body: GenerateBody } }, async (request, reply) => {
    const body = request.body
    const logprobs = logprobsAsked(body.logprobs, body.top_logprobs)
    const prompt = body.prompt ?? ''
    if (prompt === '') {
      // Ollama's forms: an empty prompt loads the model; with keep_alive 0 it unloads it.
      const { model, doneReason } = await loadForm(app.leases, { get: (name) => requestRecord(app, name) }, { model: body.model, options: body.options, keepAliveMs: parseKeepAlive(body.keep_alive), log: request.log, usage: request.usage })
      return { model, created_at: new Date().toISOString(), response: '', done: true, done_reason: doneReason }
    }
    const record = requestRecord(app, body.model)
    const format = responseFormat(body.format)
    const suffix = body.suffix ?? ''
    // As Ollama: a suffix asks for the model's fill-in-the-middle (its `insert` capability), `raw` or not.
    if (suffix !== '') await checkInsert(record, body.model)
    // Like Ollama, a prompt goes through the model's chat template unless `raw` asks for it verbatim; with a
    // suffix, through the model's FIM tokens instead (Ollama's templates' `.Suffix` branch, which has no system).
    const templated = body.raw !== true
    const infill = templated && suffix !== ''
    const images = app.images.parts(record, body.images, 'the request')
    // A raw prompt would need the runtime's own media markers where each image goes: not a form clients use.
    if (!templated && images.length > 0) throw new BadRequestError('images need the chat template: send them without "raw": true', 'images_not_supported')
    if (infill && images.length > 0) throw new BadRequestError('images do not go with "suffix": fill-in-the-middle frames text only', 'images_not_supported')
    const schema = format ? { json_schema: format.type === 'json_object' ? { type: 'object' } : (format.json_schema as { schema: unknown }).schema } : {}
    return runNative(app.leases, request, reply, {
      kind: 'generate',
      model: body.model,
      endpoint: infill ? 'infill' : templated ? 'chat' : 'completion',
      stream: body.stream ?? true,
      options: body.options,
      keepAliveMs: parseKeepAlive(body.keep_alive),
      ...(logprobs ? { logprobs } : {}),
      body: infill
        // llama-server's /infill: the prompt is the code before the gap, the suffix the code after it.
        ? { input_prefix: prompt, input_suffix: suffix, ...schema }
        : templated
          ? {
              // The request's system prompt, else the one the model was created with.
              messages: withModelSystem(record, [...(body.system ? [{ role: 'system', content: body.system }] : []), { role: 'user', content: withImages(prompt, images) }]),
              ...(format ? { response_format: format } : {}),
              ...thinkFields(record, body.think),
            }
          : { prompt, ...schema },
    })
  })
}

/** Ollama's 400 for a suffix to a model that cannot fill in the middle. @throws BadRequestError */
async function checkInsert (record: ModelRecord, model: string): Promise<void> {
  if (await modelFimTokens(record) !== null) return
  const why = record.upstream !== undefined ? `it is upstream "${record.upstream}"'s, and fill-in-the-middle is not relayed to an upstream` : 'its vocabulary has no fill-in-the-middle tokens (prefix, suffix and middle)'
  throw new BadRequestError(`${model} does not support insert: ${why}`, 'insert_not_supported')
}

export default generate
