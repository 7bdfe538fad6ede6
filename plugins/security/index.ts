import cors from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ForbiddenError, UnauthorizedError } from '../../core/errors.js'
import type { Scope } from './keys-file.js'
import { foreignHost, matchesPattern } from './host-guard.js'
import { cacheGroupOf } from './cache-group.js'
import { allowsModel, KeyRing, type Grant } from './key-ring.js'
import { modelsNamedIn, SCOPE_WORDS } from './route-scope.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the caller may see the server's details: keys are off, or it sent a valid one (public routes too). */
    keyHolder: boolean
    /** What the key the request showed may do; null when keys are off (everything) or none was shown. */
    grant: Grant | null
  }
  interface FastifyInstance {
    /** The keys the server accepts, re-read from the keys file when it changes. */
    keyRing: KeyRing
  }
  interface FastifyContextConfig {
    /**
     * Reachable without an API key: the probes (plugins/health-api, /livez, /readyz) and the web page's own files,
     * which hold no data (the page asks for the key when the API answers 401). Read from the route that matched,
     * never from the URL's text.
     */
    public?: boolean
    /**
     * What a key must be allowed to reach this route: `infer`, `manage`, `admin`, or `any` valid key (lists, its own
     * usage). A route that declares none (a third-party plugin's) needs `admin`: closed until someone decides. Models
     * a request names in its body (`model`, `name`, `source`, `destination`, `from`) or path must be the key's.
     */
    scope?: Scope | 'any'
    /** The answer lists models (`field`, each named by `key`): a key sees only those it may use. */
    modelList?: { field: string, key: string }
  }
}

/**
 * Safe defaults for a server on a workstation: a DNS-rebinding guard when bound to loopback, browser
 * origins limited to a list, and optional API keys.
 */
export default fp(async (app) => {
  const { host, allowedHosts, cors: { origins }, auth } = app.config
  const { ollamaListener, connections } = app
  const keys = new KeyRing(auth.apiKeys, auth.keysFile, app.log)
  keys.watch()
  app.decorate('keyRing', keys)
  app.addHook('onClose', async () => { keys.close() })
  // Connections no key was shown on are capped while keys are on; a keys file may turn them on or off.
  const capConnections = (): void => { connections.requireKeys(keys.enabled) }
  capConnections()
  keys.onChange(capConnections)
  const originAllowed = (origin: string): boolean => origins.some((p) => matchesPattern(origin, p))

  app.decorateRequest('keyHolder', false)
  app.decorateRequest('grant', null)
  // Callback-style, as every hook a request passes: an async hook costs each request a promise and a turn.
  app.addHook('onRequest', (request, reply, done) => {
    try {
      check(request)
    } catch (err) {
      // A refused request's body is not read: its connection closes after the refusal (a client trickling a body
      // without a key otherwise held the connection for as long as it kept sending).
      if (!request.raw.complete) reply.header('connection', 'close')
      done(err as Error)
      return
    }
    done()
  })

  function check (request: FastifyRequest): void {
    // A page on another site can make a browser send requests to 127.0.0.1 under its own host name (DNS
    // rebinding); a loopback server only answers to loopback names and the ones an admin allowed. Each address is
    // judged by what it is bound to: the Ollama listener (ollama_listen) may be on loopback when the main one is not.
    const bound = ollamaListener?.has(request.raw.socket) === true ? ollamaListener.address.host : host
    const name = foreignHost(bound, request.headers.host, allowedHosts)
    if (name !== null) throw new ForbiddenError(`host "${name}" is not allowed on a server bound to ${bound}; add it to allowed_hosts in config.yaml`, 'host_not_allowed')
    // Without CORS headers a browser would only hide the answer, not stop a simple POST: refuse it outright.
    const origin = request.headers.origin
    if (origin && !originAllowed(origin)) {
      throw new ForbiddenError(`origin "${origin}" is not allowed; add it to cors.origins in config.yaml or to LLAMAGATE_ORIGINS`, 'origin_not_allowed')
    }
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
    if (found !== null && 'grant' in found) {
      request.grant = found.grant
      request.keyHolder = true
      // Its usage is counted under the key's name, and the scheduler takes turns between keys by it.
      const usage = request.usage
      if (usage) usage.key = found.grant.name
      // Its connection is no longer one of those held without a key, which are capped (core/connection-caps.ts).
      connections.authenticate(request.raw.socket)
    }
    if (request.method === 'OPTIONS' || request.routeOptions.config.public === true) return
    if (found === null) {
      throw new UnauthorizedError(given ? 'invalid API key' : 'missing API key: send "Authorization: Bearer <key>" (or "x-api-key: <key>")')
    }
    if ('revoked' in found) throw new UnauthorizedError(`the API key "${found.revoked}" was revoked`)
    if (request.is404) return
    const scope = request.routeOptions.config.scope ?? 'admin'
    if (scope !== 'any' && !found.grant.scopes.has(scope)) {
      throw new ForbiddenError(`the API key "${found.grant.name}" may not ${SCOPE_WORDS[scope]}: it lacks the "${scope}" scope`, 'permission_denied')
    }
  }

  // After the body is parsed: the models it names must be the key's. The same answer whether a model exists or
  // not, so that a key learns nothing of the models it may not use.
  app.addHook('preHandler', (request, _reply, done) => {
    const grant = request.grant
    if (grant !== null && request.routeOptions.config.public !== true) {
      for (const name of modelsNamedIn(request.body, request.params)) {
        if (!allowsModel(grant, name, app.config.aliases.get(name.toLowerCase()))) {
          done(new ForbiddenError(`the API key "${grant.name}" may not use model "${name.slice(0, 200)}"`, 'permission_denied'))
          return
        }
      }
    }
    // The prompt caches it may reuse: its key's group's (the scheduler keeps groups apart on the runtime).
    const usage = request.usage
    if (usage !== undefined && request.routeOptions.config.scope === 'infer') {
      try {
        const group = cacheGroupOf(grant?.cacheGroup, request.body)
        if (group !== undefined) usage.cacheGroup = group
      } catch (err) {
        done(err as Error)
        return
      }
    }
    done()
  })

  app.addHook('preSerialization', async (request, _reply, payload: unknown) => {
    const list = request.routeOptions.config.modelList
    const grant = request.grant
    if (grant === null || list === undefined || typeof payload !== 'object' || payload === null) return payload
    const items = (payload as Record<string, unknown>)[list.field]
    if (!Array.isArray(items)) return payload
    const allowed = items.filter((item) => {
      const name = (item as Record<string, unknown>)[list.key]
      return typeof name === 'string' && allowsModel(grant, name, app.config.aliases.get(name.toLowerCase()))
    })
    // Anthropic's list names its first and last model apart from the list.
    const ends = 'first_id' in payload ? { first_id: (allowed[0] as { id?: string } | undefined)?.id ?? null, last_id: (allowed.at(-1) as { id?: string } | undefined)?.id ?? null } : {}
    return { ...payload, [list.field]: allowed, ...ends }
  })

  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin === undefined || originAllowed(origin)),
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  })
}, { name: 'security', fastify: '5.x' })
