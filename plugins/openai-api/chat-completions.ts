import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { runOpenAi } from './openai-run.js'
import { ChatCompletionBody, CompletionBody } from './schemas.js'

const completions: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/chat/completions', { schema: { body: ChatCompletionBody } }, (request, reply) =>
    runOpenAi(app.scheduler, request, reply, '/v1/chat/completions', request.body))
  app.post('/v1/completions', { schema: { body: CompletionBody } }, (request, reply) =>
    runOpenAi(app.scheduler, request, reply, '/v1/completions', request.body))
}

export default completions
