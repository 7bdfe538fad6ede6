import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/event-stream.js'
import { parseKeepAlive } from '../../core/units.js'
import { systemOneAnswer } from './decision-math.js'
import { SystemOneBody } from './schemas.js'
import { readSystemOne } from './systemone-request.js'

/**
 * `POST /v1/systemone`, as llama.cpp's server answers it: `{model, answers, usage}`, answers under the questions'
 * ids in their order. The body's rules are checked before the model loads.
 */
const systemOneRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/systemone', { config: { scope: 'infer' }, schema: { body: SystemOneBody } }, async (request, reply) => {
    const { body } = request
    const maker = app.decisions.makerFor(body.model)
    const ask = readSystemOne(body, { maxOptions: maker.scheme.maxLabels, noulTrueFirst: maker.scheme.noulTrueFirst })
    const keepAliveMs = parseKeepAlive(body.keep_alive)
    const result = await app.decisions.decide({
      model: body.model, ask, signal: clientGone(reply), usage: request.usage, log: request.log,
      ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    }, maker)
    return {
      model: result.model,
      answers: Object.fromEntries(result.answers.map((a) => [a.question.id, systemOneAnswer(a)])),
      usage: { input_tokens: result.inputTokens, output_tokens: 0 },
    }
  })
}

export default systemOneRoute
