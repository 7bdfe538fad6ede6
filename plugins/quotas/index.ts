import fp from 'fastify-plugin'
import { KeyQuotas, type Admission } from './key-quotas.js'
import { promptEstimate } from './prompt-estimate.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Each key's limits at the door, and the tokens its running requests hold reserved (GET /api/usage shows them). */
    quotas: KeyQuotas
  }
}

/**
 * Each API key's limits (the keys file's `limits`) on the routes that run models (`config.scope` infer): past one,
 * a 429 naming the key and the limit, with Retry-After. Keys off, or a key without limits, pass untouched.
 */
export default fp(async (app) => {
  const book = app.usage
  const quotas = new KeyQuotas({ tokensToday: (key) => book.tokensToday(key) })
  app.decorate('quotas', quotas)
  // After security's own preHandler (registered before): a request refused for its model costs the key nothing.
  app.addHook('preHandler', (request, reply, done) => {
    const grant = request.grant
    if (grant === null || request.routeOptions.config.scope !== 'infer') { done(); return }
    let admission: Admission
    try {
      admission = quotas.admit(grant)
    } catch (err) {
      done(err as Error)
      return
    }
    // Counted until its answer is over, however it ends (done, failed, or the client gone). The usage plugin's own
    // close listener, added before this one, has booked what it used by then: its reservation can go.
    if (reply.raw.destroyed) admission.end()
    else reply.raw.once('close', admission.end)
    // The scheduler keeps the key's share of a model's queue: it sees the lines (scheduler.ts, waitInLine).
    const usage = request.usage
    if (usage && grant.limits.queue_share !== undefined) usage.queueShare = grant.limits.queue_share
    // A daily limit holds against requests in flight: each reserves its tokens once the scheduler knows its cap.
    if (usage && grant.limits.tokens_per_day !== undefined) {
      const prompt = promptEstimate(request.body)
      usage.promptEstimate = prompt
      usage.reserveTokens = (maxTokens) => (usage.tokenCap = admission.reserve(prompt, maxTokens))
    }
    done()
  })
}, { name: 'quotas', dependencies: ['security', 'usage'] })
