import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { runPassthrough, type PassthroughRoute } from '../inference/passthrough-run.js'
import { OPENAI_COMPLETION_FIELDS } from '../inference/runtime-fields.js'
import { completionStreamRewrite } from './chat-spec-fields.js'
import { OPENAI_OPTIONS, STREAM_DONE } from './openai-options.js'
import { CompletionBody } from './schemas.js'

const COMPLETIONS: PassthroughRoute = {
  path: '/v1/completions', topLevelOptions: OPENAI_OPTIONS, streamEnd: STREAM_DONE, fields: OPENAI_COMPLETION_FIELDS,
  streamRewrite: (body) => completionStreamRewrite((body.stream_options as { include_usage?: boolean } | null | undefined)?.include_usage === true),
}

/** OpenAI's legacy text completions: a raw prompt, no chat template. */
const completions: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/completions', { config: { scope: 'infer' }, schema: { body: CompletionBody } }, (request, reply) =>
    runPassthrough(app.leases, request, reply, COMPLETIONS, request.body))
}

export default completions
