import type { FastifyRequest } from 'fastify'
import { GatewayError } from '../base/errors.js'
import { SCOPES, type Grant, type KeyLimits } from '../base/grant.js'
import type { AuthGrant, AuthResult, Authenticator } from './authenticators.js'
import { PRIORITIES } from '../base/priority.js'

const LIMIT_KEYS: ReadonlySet<string> = new Set<keyof KeyLimits>(['concurrent', 'requests_per_minute', 'tokens_per_day', 'queue_share'])

/**
 * The authenticators the plugins added, and the run of them a request goes through. A registry rather than a hook:
 * Fastify keeps a plugin's hooks to its own routes unless it is shared, and gives hooks no order between plugins;
 * a credential type must cover every route, ahead of the key check, in an order an admin can read.
 */
export class Authenticators {
  private readonly list: Array<Authenticator & { order: number }> = []

  add (authenticator: Authenticator): void {
    if (typeof authenticator?.authenticate !== 'function' || typeof authenticator.name !== 'string' || authenticator.name === '') {
      throw new TypeError('an authenticator needs a name and an authenticate(request) function')
    }
    this.list.push({ ...authenticator, order: authenticator.order ?? 0 })
    // Stable: equal orders stay in the order they were added in.
    this.list.sort((a, b) => a.order - b.order)
  }

  get size (): number { return this.list.length }

  /** The names, in the order they are asked. */
  names (): string[] { return this.list.map((a) => a.name) }

  /**
   * Asks each in order until one answers. Returns the grant of the first that accepts, or null when none claims the
   * request (the key check's then). A refusal (any of llamagate/plugin's errors) is thrown as it was made; anything
   * else an authenticator throws or rejects, a grant that is not one, or no answer within `timeoutMs`, is logged
   * naming it and thrown as a 500 (504 for the bound) that names nothing of it. So is a grant under a name `taken`
   * says an API key has (it would share that key's usage, limits and cached prompts), unless the authenticator says
   * it acts for keys.
   */
  async run (request: FastifyRequest, timeoutMs: number, taken: (name: string) => boolean = () => false): Promise<Grant | null> {
    for (const authenticator of this.list) {
      const given = await ask(authenticator, request, timeoutMs)
      if (given === null || given === undefined) continue
      const grant = toGrant(given, authenticator.name, request)
      if (authenticator.actsForKeys !== true && taken(grant.name)) {
        request.log.error({ plugin: authenticator.name }, `authenticator "${authenticator.name}" granted the name "${grant.name}", which an API key has: refused`)
        throw failed()
      }
      return grant
    }
    return null
  }
}

const TIMED_OUT = Symbol('timed out')

async function ask (authenticator: Authenticator, request: FastifyRequest, timeoutMs: number): Promise<AuthResult> {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<typeof TIMED_OUT>((resolve) => { timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs) })
  try {
    const answer = await Promise.race([(async () => authenticator.authenticate(request, controller.signal))(), bound])
    if (answer !== TIMED_OUT) return answer
    controller.abort()
    request.log.error({ plugin: authenticator.name }, `authenticator "${authenticator.name}" did not answer within limits.hook_timeout (${timeoutMs} ms): its request was answered 504`)
    throw new GatewayError(504, 'authentication did not finish in time (limits.hook_timeout); try again', { code: 'authentication_timeout' })
  } catch (err) {
    // A refusal the plugin meant (UnauthorizedError, ForbiddenError: any copy of the gateway's error classes).
    if (err instanceof GatewayError) throw err
    request.log.error({ plugin: authenticator.name, err }, `authenticator "${authenticator.name}" failed: ${(err as Error)?.message ?? String(err)}`)
    throw failed()
  } finally {
    clearTimeout(timer)
  }
}

function failed (): GatewayError {
  return new GatewayError(500, 'authentication failed inside the server: see the server log for details', { code: 'authentication_failed' })
}

/** The grant as the gateway carries it; a malformed one is the plugin's bug, answered as a failure. */
function toGrant (given: AuthGrant, plugin: string, request: FastifyRequest): Grant {
  const problem = grantProblem(given)
  if (problem !== null) {
    request.log.error({ plugin }, `authenticator "${plugin}" returned a grant that is not one: ${problem}`)
    throw failed()
  }
  const limits = given.limits ?? {}
  return Object.freeze({
    name: given.name,
    scopes: new Set(given.scopes),
    models: Object.freeze([...given.models]),
    limits: Object.freeze({ ...limits }),
    cacheGroup: given.cacheGroup ?? given.name,
    ...(given.priority !== undefined ? { priority: Object.freeze({ ...given.priority }) } : {}),
  })
}

function grantProblem (given: AuthGrant): string | null {
  if (typeof given !== 'object') return `${typeof given}, not an object`
  if (typeof given.name !== 'string' || given.name === '') return 'name: a non-empty string'
  if (!Array.isArray(given.scopes) || given.scopes.some((s) => !SCOPES.includes(s))) return `scopes: a list of ${SCOPES.join(', ')}`
  if (!Array.isArray(given.models) || given.models.some((m) => typeof m !== 'string')) return 'models: a list of names or patterns'
  if (given.cacheGroup !== undefined && (typeof given.cacheGroup !== 'string' || given.cacheGroup === '')) return 'cacheGroup: a non-empty string'
  if (given.priority !== undefined) {
    if (typeof given.priority !== 'object' || given.priority === null) return 'priority: an object of default and max'
    for (const field of ['default', 'max'] as const) {
      const value = given.priority[field]
      if (value !== undefined && !PRIORITIES.includes(value)) return `priority.${field}: one of ${PRIORITIES.join(', ')}`
    }
  }
  const limits = given.limits ?? {}
  if (typeof limits !== 'object' || limits === null) return 'limits: an object'
  for (const [key, value] of Object.entries(limits)) {
    if (!LIMIT_KEYS.has(key)) return `limits.${key}: not a known limit (${[...LIMIT_KEYS].join(', ')})`
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) return `limits.${key}: a positive number`
  }
  return null
}
