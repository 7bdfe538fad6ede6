import fp from 'fastify-plugin'
import { KeyQuotas } from './key-quotas.js'

/**
 * Each API key's limits (the keys file's `limits`) on the routes that run models (`config.scope` infer): past one,
 * a 429 naming the key and the limit, with Retry-After. Keys off, or a key without limits, pass untouched.
 */
export default fp(async (app) => {
  const book = app.usage
  const quotas = new KeyQuotas({ tokensToday: (key) => book.tokensToday(key) })
  // After security's own preHandler (registered before): a request refused for its model costs the key nothing.
  app.addHook('preHandler', (request, reply, done) => {
    const grant = request.grant
    if (grant === null || request.routeOptions.config.scope !== 'infer') { done(); return }
    let end: () => void
    try {
      end = quotas.admit(grant)
    } catch (err) {
      done(err as Error)
      return
    }
    // Counted until its answer is over, however it ends (done, failed, or the client gone).
    if (reply.raw.destroyed) end()
    else reply.raw.once('close', end)
    // The scheduler keeps the key's share of a model's queue: it sees the lines (scheduler.ts, waitInLine).
    const usage = request.usage
    if (usage && grant.limits.queue_share !== undefined) usage.queueShare = grant.limits.queue_share
    done()
  })
}, { name: 'quotas', dependencies: ['security', 'usage'] })
