import type { FastifyPluginAsync } from 'fastify'
import health from './health/index.js'
import security from './security/index.js'

/**
 * The built-in plugins, in the order they are registered. Each declares its `dependencies` by name, so
 * Fastify refuses to start if this order ever breaks them.
 */
export const BUILTIN_PLUGINS: FastifyPluginAsync[] = [
  security,
  health,
]
