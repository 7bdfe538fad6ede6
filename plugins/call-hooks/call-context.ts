import type { FastifyRequest } from 'fastify'
import type { CallHooks } from '../../core/platform/call-hook-registry.js'
import type { HookLog } from '../../core/platform/call-hooks.js'
import type { Grant } from '../../core/base/grant.js'

/** Who a call is, for its hooks: made by `callContext` only when some plugin registered call hooks. */
export interface CallContext {
  hooks: CallHooks
  surface: string
  route: string
  key: string | null
  grant: Grant | null
  log: HookLog
}

/** The request's call context, or null when no plugin registered call hooks (its path then costs nothing more). */
export function callContext (request: FastifyRequest): CallContext | null {
  const hooks = request.server.callHooks
  if (hooks.empty) return null
  const { surfaces } = request.server
  return { hooks, surface: surfaces.labelOf(request.url), route: request.url.split('?', 1)[0]!, key: request.grant?.name ?? null, grant: request.grant ?? null, log: request.log }
}
