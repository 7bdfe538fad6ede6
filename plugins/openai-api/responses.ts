import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/client-gone.js'
import { runPassthrough, type PassthroughRoute } from '../inference/passthrough-run.js'
import { ResponsesBody } from './schemas.js'

// A Responses stream has no [DONE]: its last event is `response.completed`, whose data holds the whole
// response; the body ending in good order (the relay checks the chunked coding's end) is the sign.
const RESPONSES: PassthroughRoute = {
  path: '/v1/responses',
  topLevelOptions: { temperature: 'temperature', top_p: 'top_p', max_output_tokens: 'max_tokens' },
  streamEnd: null,
}

/** OpenAI's Responses API (`client.responses.create`), through llama-server's own. */
const responses: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/responses', { schema: { body: ResponsesBody } }, async (request, reply) => {
    const body = request.body
    const input = await app.images.inline(app.store.get(body.model), body.input, clientGone(reply))
    return runPassthrough(app.scheduler, request, reply, RESPONSES, { ...body, input })
  })
}

export default responses
