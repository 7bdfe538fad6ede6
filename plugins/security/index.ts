import cors from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ForbiddenError, UnauthorizedError } from '../../core/errors.js'
import { ApiKeys } from './api-keys.js'
import { foreignHost, matchesPattern } from './host-guard.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the caller may see the server's details: keys are off, or it sent a valid one (public routes too). */
    keyHolder: boolean
  }
  interface FastifyContextConfig {
    /**
     * Reachable without an API key: the probes (plugins/health-api, /livez, /readyz) and the web page's own files,
     * which hold no data (the page asks for the key when the API answers 401). Read from the route that matched,
     * never from the URL's text.
     */
    public?: boolean
  }
}

/**
 * Safe defaults for a server on a workstation: a DNS-rebinding guard when bound to loopback, browser
 * origins limited to a list, and optional API keys.
 */
export default fp(async (app) => {
  const { host, allowedHosts, cors: { origins }, auth } = app.config
  const { ollamaListener, connections } = app
  const keys = new ApiKeys(auth.apiKeys)
  const originAllowed = (origin: string): boolean => origins.some((p) => matchesPattern(origin, p))

  app.decorateRequest('keyHolder', false)
  app.addHook('onRequest', async (request, reply) => {
    try {
      check(request)
    } catch (err) {
      // A refused request's body is not read: its connection closes after the refusal (a client trickling a body
      // without a key otherwise held the connection for as long as it kept sending).
      if (!request.raw.complete) reply.header('connection', 'close')
      throw err
    }
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
    const apiKey = request.headers['x-api-key']
    const xApiKey = typeof apiKey === 'string' ? apiKey : undefined
    request.keyHolder = !keys.enabled || keys.accepts(request.headers.authorization, xApiKey)
    // Its connection is no longer one of those held without a key, which are capped (core/connection-caps.ts).
    if (request.keyHolder) connections.authenticate(request.raw.socket)
    if (keys.enabled && request.method !== 'OPTIONS' && request.routeOptions.config.public !== true) {
      if (!request.keyHolder) {
        throw new UnauthorizedError(request.headers.authorization || xApiKey ? 'invalid API key' : 'missing API key: send "Authorization: Bearer <key>" (or "x-api-key: <key>")')
      }
    }
  }

  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin === undefined || originAllowed(origin)),
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  })
}, { name: 'security', fastify: '5.x' })
