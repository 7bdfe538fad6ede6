import fp from 'fastify-plugin'
import { KeyQuotas } from './key-quotas.js'
import { admitRequest } from './quota-gate.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Each key's limits at the door, and the tokens its running requests hold reserved (GET /api/usage shows them). */
    quotas: KeyQuotas
  }
}

/**
 * Each API key's limits (the keys file's `limits`) on the routes that run models (`config.scope` infer): past one,
 * a 429 naming the key and the limit, with Retry-After (quota-gate.ts). Keys off, or a key without limits, pass
 * untouched.
 */
export default fp(async (app) => {
  const book = app.usage
  const quotas = new KeyQuotas({ tokensToday: (key) => book.tokensToday(key) })
  app.decorate('quotas', quotas)
  // After security's own preHandler (registered before): a request refused for its model costs the key nothing.
  app.addHook('preHandler', (request, reply, done) => {
    try {
      admitRequest(quotas, request, reply)
    } catch (err) {
      done(err as Error)
      return
    }
    done()
  })
}, { name: 'quotas', dependencies: ['security', 'usage'] })
