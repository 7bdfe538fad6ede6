import Fastify, { type FastifyInstance } from 'fastify'
import { ConnectionCaps } from '../../core/server/connection-caps.js'
import { headerTimeoutOptions } from '../../core/server/header-timeout.js'
import type { HostPort } from '../../core/base/host-port.js'
import type { Logger } from '../../core/base/logger.js'
import { foreignHost } from '../security/host-guard.js'
import metricsRoute, { type MetricsRouteOptions } from './metrics-route.js'

export interface MetricsListenerOptions {
  /** `metrics.listen`. */
  listen: HostPort
  /** The main address's limits on slow heads and on connections per client (`limits.*`). */
  headerTimeoutMs: number
  connectionsPerClient: number
  /** `allowed_hosts`: names a loopback listener answers to besides loopback names. */
  allowedHosts: readonly string[]
  route: MetricsRouteOptions
  log: Logger
}

/**
 * `metrics.listen`: GET /metrics on a listener of its own, without a key, listening when this resolves; closing the
 * returned app stops it.
 */
export async function listenForMetrics (options: MetricsListenerOptions): Promise<FastifyInstance> {
  const { listen } = options
  // The main address's limits on slow heads and on connections per client hold here too (no key to cap by).
  const admin = Fastify({ logger: false, http: headerTimeoutOptions(options.headerTimeoutMs) })
  const connections = new ConnectionCaps({ perClient: options.connectionsPerClient, unauthenticated: null, log: options.log })
  connections.guard(admin.server)
  admin.addHook('preClose', async () => { connections.stop() })
  // Keyless, so at least held to its own host names: a rebinding page must not read the model names from it.
  admin.addHook('onRequest', async (request, reply) => {
    const name = foreignHost(listen.host, request.headers.host, options.allowedHosts)
    if (name !== null) return reply.code(403).send({ error: `host "${name}" is not allowed on a listener bound to ${listen.host}; add it to allowed_hosts in config.yaml` })
  })
  await admin.register(metricsRoute, options.route)
  await admin.listen({ host: listen.host, port: listen.port })
  return admin
}
