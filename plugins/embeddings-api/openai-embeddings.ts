import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { embedInputs, type EmbedInput } from './embed-run.js'
import { requestRecord } from '../inference/request-record.js'
import { runWhole } from '../inference/whole-run.js'
import { OpenAiEmbeddingsBody } from './schemas.js'
import { checkDimensions, shorten, toBase64 } from './vectors.js'

/** OpenAI's `/v1/embeddings`, as its SDK and LangChain call it: text or token ids, floats or base64. */
const openAiEmbeddings: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/embeddings', { config: { scope: 'infer' }, schema: { body: OpenAiEmbeddingsBody } }, async (request, reply) => {
    const { body } = request
    const { input } = body
    // One text, a list of texts, one list of token ids, or a list of those.
    checkDimensions(body.dimensions, requestRecord(app, body.model).gguf?.embedding_length)
    const inputs: EmbedInput[] = typeof input === 'string' ? [input] : typeof input[0] === 'number' ? [input as number[]] : input as EmbedInput[]
    return runWhole(app.leases, request, reply, body, 'embed', async (lease) => {
      const { vectors, promptTokens } = await embedInputs(lease, inputs, { truncate: body.truncate ?? true, normalize: true })
      const base64 = body.encoding_format === 'base64'
      return {
        object: 'list',
        data: vectors.map((v, index) => {
          const vector = shorten(v, body.dimensions, true)
          return { object: 'embedding', index, embedding: base64 ? toBase64(vector) : vector }
        }),
        model: lease.model.name,
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      }
    })
  })
}

export default openAiEmbeddings
