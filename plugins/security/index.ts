import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import type { Scope } from './keys-file.js'
import { KeyRing, type Grant } from './key-ring.js'
import { RequestGuard } from './request-guard.js'
import { reachOf } from '../storage/name-reach.js'

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
    /** The answer lists models (`field`, and any `alsoFields`, each named by `key`): a key sees only those it may use. */
    modelList?: { field: string, key: string, alsoFields?: string[] }
  }
}

/**
 * Safe defaults for a server on a workstation: a DNS-rebinding guard when bound to loopback, browser
 * origins limited to a list, and optional API keys (request-guard.ts).
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
  // The store comes after this plugin (storage depends on it): asked per request, as it resolves names; without
  // one (a server of upstreams only) nothing is stored and an alias reaches its model.
  const aliasOf = (name: string): string | undefined => app.config.aliases.get(name.toLowerCase())
  const guard = new RequestGuard({
    host, allowedHosts, origins, keys, ollamaListener, connections,
    reach: (name) => app.hasDecorator('store') ? app.store.reach(name) : reachOf(name, () => undefined, aliasOf),
  })

  app.decorateRequest('keyHolder', false)
  app.decorateRequest('grant', null)
  // Callback-style, as every hook a request passes: an async hook costs each request a promise and a turn, paid
  // only where a plugin added a credential type (app.authenticators, asked before the key).
  const { authenticators } = app
  const hookTimeoutMs = app.config.limits.hookTimeoutMs
  app.addHook('onRequest', (request, reply, done) => {
    const refuse = (err: unknown): void => {
      // A refused request's body is not read: its connection closes after the refusal (a client trickling a body
      // without a key otherwise held the connection for as long as it kept sending).
      if (!request.raw.complete) reply.header('connection', 'close')
      done(err as Error)
    }
    if (authenticators.size > 0) {
      guard.admitWith(request, authenticators, hookTimeoutMs).then(() => done(), refuse)
      return
    }
    try {
      guard.admit(request)
    } catch (err) {
      refuse(err)
      return
    }
    done()
  })
  // After the body is parsed: the models it names, and the prompt-cache group it computes in.
  app.addHook('preHandler', (request, _reply, done) => {
    try {
      guard.checkBody(request)
    } catch (err) {
      done(err as Error)
      return
    }
    done()
  })
  app.addHook('preSerialization', async (request, _reply, payload: unknown) => guard.filterList(request, payload))

  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin === undefined || guard.originAllowed(origin)),
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  })
}, { name: 'security', fastify: '5.x' })
