import fp from 'fastify-plugin'
import { LeaseRouter } from './lease-router.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Where every request's lease comes from: the stored models' source (the scheduler registers itself) and the
     * backends registered after it (config.yaml's upstreams, a plugin's own).
     */
    leases: LeaseRouter
  }
}

/**
 * The lease contract every backend shares (no routes): the lease types (lease.ts), the terms every lease keeps
 * (lease-terms.ts: its books, its salt, its key's reserved tokens), the one per-key line (key-line.ts) and the router
 * the sources register with.
 */
export default fp(async (app) => {
  app.decorate('leases', new LeaseRouter((err) => app.log.warn({ err }, 'a lease observer failed')))
}, { name: 'leases' })
