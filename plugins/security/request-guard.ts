import type { FastifyRequest } from 'fastify'
import type { Authenticators } from '../../core/platform/authenticator-registry.js'
import type { ConnectionCaps } from '../../core/server/connection-caps.js'
import { ForbiddenError, UnauthorizedError } from '../../core/base/errors.js'
import type { OllamaListener } from '../../core/server/ollama-listener.js'
import { cacheGroupOf } from './cache-group.js'
import { foreignHost, matchesPattern } from './host-guard.js'
import { allowsModel, type Grant, type KeyRing } from './key-ring.js'
import { modelsNamedIn, SCOPE_WORDS } from './route-scope.js'
import type { NameReach } from '../storage/name-reach.js'

declare module '../../core/base/request-usage.js' {
  interface RequestUsage {
    /** The name of the API key the request showed; absent when keys are off. */
    key?: string
    /**
     * The prompt-cache group the request computes and reuses prompts in (its key's group, and the request's own
     * `cache_salt` within it); absent: the one group of a server without keys.
     */
    cacheGroup?: string
  }
}

export interface RequestGuardOptions {
  /** The main address's host (`host`); the Ollama listener's own is judged by its bound address. */
  host: string
  /** `allowed_hosts`: names a loopback listener answers to besides loopback names. */
  allowedHosts: readonly string[]
  /** `cors.origins`: browser origins allowed, `*` matching anything. */
  origins: readonly string[]
  keys: KeyRing
  ollamaListener: OllamaListener | null
  connections: ConnectionCaps
  /** What a model name reaches: the stored model of that name, else the model its alias names (storage/name-reach.ts). */
  reach: (name: string) => NameReach<unknown>
}

/**
 * What a request must pass to be served: its Host (DNS rebinding), its Origin, its API key and the key's scope at
 * the door; the models its body names once parsed; the models a list shows on the way out. Each step throws the
 * refusal (ForbiddenError, UnauthorizedError) for the security plugin's hooks to hand on.
 */
export class RequestGuard {
  constructor (private readonly options: RequestGuardOptions) {}

  /** Whether a browser page from `origin` may call the API. */
  originAllowed (origin: string): boolean {
    return this.options.origins.some((p) => matchesPattern(origin, p))
  }

  /** At the door (onRequest): Host, Origin, API key, scope; marks the request's key holder, grant and usage key. */
  admit (request: FastifyRequest): void {
    this.checkSite(request)
    this.admitKey(request)
  }

  /**
   * At the door with the plugins' credential types: Host and Origin, then the authenticators in order (a grant one
   * gives is taken as a key's), then the API key. On a public route a credential refused or failing counts as none.
   */
  async admitWith (request: FastifyRequest, authenticators: Authenticators, timeoutMs: number): Promise<void> {
    this.checkSite(request)
    // A preflight carries no credential.
    if (request.method === 'OPTIONS') return this.admitKey(request)
    let grant: Grant | null
    try {
      // A plugin's credential never takes an API key's name (its usage, its limits, its cache group).
      this.options.keys.refresh()
      grant = await authenticators.run(request, timeoutMs, (name) => this.options.keys.has(name))
    } catch (err) {
      if (request.routeOptions.config.public !== true) throw err
      grant = null
    }
    if (grant === null) this.admitKey(request)
    else this.admitGrant(request, grant)
  }

  /** Host and Origin: where the request comes from, before any credential. */
  private checkSite (request: FastifyRequest): void {
    const { host, allowedHosts, ollamaListener } = this.options
    // A page on another site can make a browser send requests to 127.0.0.1 under its own host name (DNS
    // rebinding); a loopback server only answers to loopback names and the ones an admin allowed. Each address is
    // judged by what it is bound to: the Ollama listener (ollama_listen) may be on loopback when the main one is not.
    const bound = ollamaListener?.has(request.raw.socket) === true ? ollamaListener.address.host : host
    const name = foreignHost(bound, request.headers.host, allowedHosts)
    if (name !== null) throw new ForbiddenError(`host "${name}" is not allowed on a server bound to ${bound}; add it to allowed_hosts in config.yaml`, 'host_not_allowed')
    // Without CORS headers a browser would only hide the answer, not stop a simple POST: refuse it outright.
    const origin = request.headers.origin
    if (origin && !this.originAllowed(origin)) {
      throw new ForbiddenError(`origin "${origin}" is not allowed; add it to cors.origins in config.yaml or to LLAMAGATE_ORIGINS`, 'origin_not_allowed')
    }
  }

  /** The API key the request shows, and its scope. */
  private admitKey (request: FastifyRequest): void {
    const { keys } = this.options
    // Re-read first: a first key added since the last request (the watcher may not have fired, or had no folder to
    // watch) turns keys on for this request already.
    keys.refresh()
    if (!keys.enabled) {
      request.keyHolder = true
      return
    }
    const apiKey = request.headers['x-api-key']
    const xApiKey = typeof apiKey === 'string' ? apiKey : undefined
    const given = (/^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? xApiKey)?.trim()
    const found = given ? keys.check(given) : null
    if (found !== null && 'grant' in found) return this.admitGrant(request, found.grant)
    if (request.method === 'OPTIONS' || request.routeOptions.config.public === true) return
    if (found === null) {
      throw new UnauthorizedError(given ? 'invalid API key' : 'missing API key: send "Authorization: Bearer <key>" (or "x-api-key: <key>")')
    }
    throw new UnauthorizedError(`the API key "${found.revoked}" was revoked`)
  }

  /** A valid credential's grant (a key's, or an authenticator's): marks the request with it, then its scope. */
  private admitGrant (request: FastifyRequest, grant: Grant): void {
    request.grant = grant
    request.keyHolder = true
    // Its usage is counted under the key's name, and the scheduler takes turns between keys by it.
    const usage = request.usage
    if (usage) {
      usage.key = grant.name
      usage.priorityRule = grant.priority ?? {}
    }
    // Its connection is no longer one of those held without a key, which are capped (core/server/connection-caps.ts).
    this.options.connections.authenticate(request.raw.socket)
    if (request.method === 'OPTIONS' || request.routeOptions.config.public === true || request.is404) return
    const scope = request.routeOptions.config.scope ?? 'admin'
    if (scope !== 'any' && !grant.scopes.has(scope)) {
      throw new ForbiddenError(`the API key "${grant.name}" may not ${SCOPE_WORDS[scope]}: it lacks the "${scope}" scope`, 'permission_denied')
    }
  }

  /**
   * Once the body is parsed (preHandler): the models it names must be the key's, with the same answer whether a
   * model exists or not, so that a key learns nothing of the models it may not use; then the prompt caches it may
   * reuse, its key's group's (the scheduler keeps groups apart on the runtime).
   */
  checkBody (request: FastifyRequest): void {
    const grant = request.grant
    if (grant !== null && request.routeOptions.config.public !== true) {
      for (const name of modelsNamedIn(request.body, request.params, request.query)) {
        if (!allowsModel(grant, name, this.options.reach(name))) {
          throw new ForbiddenError(`the API key "${grant.name}" may not use model "${name.slice(0, 200)}"`, 'permission_denied')
        }
      }
    }
    const usage = request.usage
    if (usage !== undefined && request.routeOptions.config.scope === 'infer') {
      const group = cacheGroupOf(grant?.cacheGroup, request.body)
      if (group !== undefined) usage.cacheGroup = group
    }
  }

  /** On the way out (preSerialization): a list of models (`config.modelList`) shows only those the key may use. */
  filterList (request: FastifyRequest, payload: unknown): unknown {
    const list = request.routeOptions.config.modelList
    const grant = request.grant
    if (grant === null || list === undefined || typeof payload !== 'object' || payload === null) return payload
    const cut = (field: string): unknown[] | null => {
      const items = (payload as Record<string, unknown>)[field]
      return !Array.isArray(items) ? null : items.filter((item) => {
        const name = (item as Record<string, unknown>)[list.key]
        return typeof name === 'string' && allowsModel(grant, name, this.options.reach(name))
      })
    }
    // Other lists of the same reply (/api/ps's prepared runtimes) are cut the same way.
    const others = Object.fromEntries((list.alsoFields ?? []).flatMap((field) => { const allowed = cut(field); return allowed === null ? [] : [[field, allowed]] }))
    const allowed = cut(list.field)
    if (allowed === null) return { ...payload, ...others }
    // Anthropic's list names its first and last model apart from the list.
    const ends = 'first_id' in payload ? { first_id: (allowed[0] as { id?: string } | undefined)?.id ?? null, last_id: (allowed.at(-1) as { id?: string } | undefined)?.id ?? null } : {}
    return { ...payload, ...others, [list.field]: allowed, ...ends }
  }
}
