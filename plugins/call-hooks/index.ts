import fp from 'fastify-plugin'

/**
 * The plugins' call hooks (`app.callHooks`, the core's registry: core/call-hooks.ts) run on every inference call: a
 * lease's endpoint wrapped so that every surface's request and answer pass them (hooked-call.ts), and the calls
 * without pieces (answer-call-hooks.ts). No routes and no service of its own: inference and the surfaces import its
 * functions and depend on it.
 */
export default fp(async () => {}, { name: 'call-hooks', dependencies: ['leases'] })
