import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/server/event-stream.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { withAnswerCallHooks } from '../call-hooks/answer-call-hooks.js'
import { callContext } from '../call-hooks/call-context.js'
import { stateForHooks, stateFromHooks } from './decision-call-hooks.js'
import { SystemOneBody } from './schemas.js'

/**
 * `POST /v1/systemone`, as llama.cpp's server answers it: `{model, answers, usage}`, answers under the questions'
 * ids in their order. The body's rules are checked before the model loads. The plugins' call hooks see it as a call
 * whose state is its prompt or messages and whose questions are `options.questions` (decision-call-hooks.ts).
 */
const systemOneRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/systemone', { config: { scope: 'infer' }, schema: { body: SystemOneBody } }, async (request, reply) => {
    const { body } = request
    const keepAliveMs = parseKeepAlive(body.keep_alive)
    const start = { model: body.model, ...stateForHooks(body.state), options: { questions: body.questions } }
    return withAnswerCallHooks(callContext(request), start, clientGone(reply), (call, signal) => app.decisions.ask({
      model: call.model,
      request: { ...body, state: stateFromHooks(call, body.state), questions: call.options.questions },
      signal,
      usage: request.usage,
      log: request.log,
      ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    }), (answer) => ({ text: JSON.stringify(answer.answers), promptTokens: answer.usage.input_tokens, completionTokens: 0 }))
  })
}

export default systemOneRoute
