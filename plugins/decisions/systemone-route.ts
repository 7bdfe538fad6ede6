import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/event-stream.js'
import { parseKeepAlive } from '../../core/units.js'
import { SystemOneBody } from './schemas.js'

/**
 * `POST /v1/systemone`, as llama.cpp's server answers it: `{model, answers, usage}`, answers under the questions'
 * ids in their order. The body's rules are checked before the model loads.
 */
const systemOneRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/systemone', { config: { scope: 'infer' }, schema: { body: SystemOneBody } }, async (request, reply) => {
    const { body } = request
    const keepAliveMs = parseKeepAlive(body.keep_alive)
    return app.decisions.ask({
      model: body.model,
      request: body,
      signal: clientGone(reply),
      usage: request.usage,
      log: request.log,
      ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    })
  })
}

export default systemOneRoute
