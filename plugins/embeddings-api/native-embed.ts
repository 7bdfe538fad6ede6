import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError } from '../../core/base/errors.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { loadForm } from '../inference/load-form.js'
import { requestRecord } from '../inference/request-record.js'
import { runWhole, type LeasedBody } from '../inference/whole-run.js'
import { embedInputs } from './embed-run.js'
import { EmbedBody, LegacyEmbeddingsBody } from './schemas.js'
import { checkDimensions, shorten } from './vectors.js'

const MS_TO_NS = 1e6

/** Ollama's embedding routes: `/api/embed` (a batch, normalized) and the legacy `/api/embeddings` (one prompt, raw). */
const nativeEmbed: FastifyPluginAsyncTypebox = async (app) => {
  // Ollama's load form: nothing to embed loads the model (or, with keep_alive 0, lets it go).
  async function loadOnly (body: LeasedBody): Promise<string> {
    return (await loadForm(app.leases, { get: (name) => requestRecord(app, name) }, { model: body.model, options: body.options, keepAliveMs: parseKeepAlive(body.keep_alive), purpose: 'embed' })).model
  }

  app.post('/api/embed', { config: { scope: 'infer' }, schema: { body: EmbedBody } }, async (request, reply) => {
    const started = performance.now()
    const { body } = request
    const inputs = typeof body.input === 'string' ? (body.input === '' ? [] : [body.input]) : body.input ?? []
    if (inputs.length === 0) return { model: await loadOnly(body), embeddings: [] }
    checkDimensions(body.dimensions, requestRecord(app, body.model).gguf?.embedding_length)
    const empty = inputs.indexOf('')
    if (empty !== -1) throw new BadRequestError(`input ${empty} is an empty string: there is nothing to embed`, 'empty_input')
    return runWhole(app.leases, request, reply, body, 'embed', async (lease) => {
      const { vectors, promptTokens } = await embedInputs(lease, inputs, { truncate: body.truncate ?? true, normalize: true })
      return {
        model: lease.model.name,
        embeddings: vectors.map((v) => shorten(v, body.dimensions, true)),
        total_duration: Math.round((performance.now() - started) * MS_TO_NS),
        load_duration: Math.round(lease.loadDurationMs * MS_TO_NS),
        prompt_eval_count: promptTokens,
      }
    })
  })

  app.post('/api/embeddings', { config: { scope: 'infer' }, schema: { body: LegacyEmbeddingsBody } }, async (request, reply) => {
    const { body } = request
    if (!body.prompt) {
      await loadOnly(body)
      return { embedding: [] }
    }
    const prompt = body.prompt
    return runWhole(app.leases, request, reply, body, 'embed', async (lease) => {
      const { vectors } = await embedInputs(lease, [prompt], { truncate: true, normalize: false })
      return { embedding: vectors[0]! }
    })
  })
}

export default nativeEmbed
