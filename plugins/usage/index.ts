import { join } from 'node:path'
import fp from 'fastify-plugin'
import { bookedUsage } from './booked-usage.js'
import { UsageLedger } from './usage-ledger.js'
import usageRoute, { ANONYMOUS } from './usage-route.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Usage per API key and model, kept across restarts in `<data_dir>/usage.json` (the quotas read `tokensToday`). */
    usage: UsageLedger
  }
}

// What a crash can lose; a write is one small file, so often enough costs nothing.
const FLUSH_EVERY_MS = 5_000

/**
 * Counts what each API key used of each model (`anonymous` when keys are off): one request, with the tokens and
 * times its leases filled in (core/base/request-usage.ts), once its reply is over. Serves GET /api/usage.
 */
export default fp(async (app) => {
  const ledger = new UsageLedger({ file: join(app.config.dataDir, 'usage.json'), log: app.log })
  await ledger.load()
  app.decorate('usage', ledger)

  // Registered after the access log's hook, so the request carries its record; after the security plugin's,
  // which names the key on it. Only requests that used a model count.
  app.addHook('onRequest', (request, reply, done) => {
    const usage = request.usage
    if (usage !== undefined) {
      reply.raw.once('close', () => {
        if (usage.model === undefined) return
        ledger.record(usage.key ?? ANONYMOUS, usage.model, bookedUsage(usage))
      })
    }
    done()
  })

  const timer = setInterval(() => { void ledger.flush() }, FLUSH_EVERY_MS)
  timer.unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await ledger.flush()
  })

  await app.register(usageRoute, {
    ledger,
    keyExists: (name) => app.keyRing.has(name),
    keyLimits: (name) => { const limits = app.keyRing.limitsOf(name); return limits === null ? null : { ...limits } },
    // The quotas plugin comes after this one (it reads this book): asked when a request comes, it is there.
    reservedBy: (name) => app.hasDecorator('quotas') ? app.quotas.reservedBy(name) : 0,
  })
}, { name: 'usage', dependencies: ['access-log', 'security', 'scheduler'] })
