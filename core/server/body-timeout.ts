import type { FastifyInstance } from 'fastify'

/**
 * A request whose body has not arrived whole `ms` after its head is cut off (its connection destroyed): a client
 * trickling a body a byte at a time would otherwise hold a connection, and the memory of what it sent, for as long
 * as it liked (Node's own limit is 5 minutes). A route that takes large bodies on purpose (a model upload) says
 * `config: { longBody: true }` and is exempt.
 */
export function installBodyTimeout (app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    if (raw.complete || request.routeOptions.config.longBody === true) { done(); return }
    const timer = setTimeout(() => {
      if (!raw.complete) {
        request.log.info({ ms }, 'request body not received in time: connection closed')
        raw.socket.destroy()
      }
    }, ms)
    raw.once('end', () => clearTimeout(timer))
    reply.raw.once('close', () => clearTimeout(timer))
    done()
  })
}
