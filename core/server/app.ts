import sensible from '@fastify/sensible'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '../platform/config.js'
import { installErrorHandling } from './error-handler.js'
import { GatewayError } from '../base/errors.js'
import { exceedsJsonDepth } from '../base/json-depth.js'
import { installBodyTimeout } from './body-timeout.js'
import { ConnectionCaps } from './connection-caps.js'
import { headerTimeoutOptions } from './header-timeout.js'
import { lazyCompilers, warmValidators } from './lazy-compilers.js'
import { OllamaListener } from './ollama-listener.js'
import { checkConfig } from '../platform/config-checks.js'
import { builtinServerPlugins, registerAdminPlugins } from '../platform/plugin-loader.js'
import { allManifests } from '../platform/plugin-manifests.js'
import { Surfaces } from '../base/surface-registry.js'
import { Authenticators } from '../platform/authenticator-registry.js'
import { CallHooks } from '../platform/call-hook-registry.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The resolved configuration. */
    config: Config
    /** Lines for the start-up log (the chosen runtime and why, ...); plugins add to it. */
    startupNotes: string[]
    /** The API surfaces the plugins registered: the label a path is counted by, the shape its errors take. */
    surfaces: Surfaces
    /** Plugins' hooks on every inference call: before, each piece, after, failure (core/platform/call-hooks.ts). */
    callHooks: CallHooks
    /** Credential types of the plugins' own, asked in order before the API key check (`app.authenticators.add`). */
    authenticators: Authenticators
    /** The second address for Ollama's clients (`ollama_listen`), or null. */
    ollamaListener: OllamaListener | null
    /** The connection caps on both addresses; the security plugin tells it which connections showed a valid key. */
    connections: ConnectionCaps
    /** Prepares what every first request shares (the schema validators' compiler); `serve` calls it once listening. */
    warmUp: () => void
  }
  interface FastifyContextConfig {
    /**
     * A probe or a scrape (`/api/health`, `/livez`, `/metrics`, ...): it says whether the server is there, not work.
     * Not in the access log, answered during a drain and not waited for by it. Read from the route that matched.
     */
    probe?: boolean
    /** Takes bodies that may arrive slowly on purpose (a model upload): exempt from limits.body_timeout. */
    longBody?: boolean
  }
}

// JSON schemas in `format` and tool parameters nest a few dozen levels at most.
const MAX_JSON_DEPTH = 128

export interface BuildOptions {
  /** Fastify logger options; defaults to pino at the configured level. */
  logger?: boolean | Record<string, unknown>
  /**
   * Fastify's schema compilers. The tests hand every app of a test process one validator compiler, so that a
   * route's schema is compiled once per process rather than once per app that uses it.
   * @default Ajv's and fast-json-stringify's, each compiled on first use (lazyCompilers), one set per app
   */
  schemaController?: FastifyServerOptions['schemaController']
}

/**
 * Builds the app with every plugin registered and ready, without listening: tests drive it with `inject`
 * or `listen()` alike. @throws ConfigError when a plugin finds the configuration wrong
 */
export async function buildApp (given: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  // What only a plugin can tell about the configuration is checked before anything starts.
  const config = await checkConfig(given, await allManifests(given))
  const schemaController = options.schemaController ?? { compilersFactory: lazyCompilers() }
  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.limits.bodySize,
    http: headerTimeoutOptions(config.limits.headerTimeoutMs),
    schemaController,
    // Per-request log lines cost time on every streamed request; errors are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: {
      // Wrong types are the client's mistake to hear about, not to have silently converted.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // httpErrors, reply.notFound(), reply.vary(), reply.cacheControl() for the built-in plugins and a plugin's alike;
  // the error handler answers its errors in each surface's shape.
  app.register(sensible)
  app.decorate('config', config)
  app.decorate('startupNotes', [] as string[])
  app.decorate('surfaces', new Surfaces())
  app.decorate('authenticators', new Authenticators())
  app.decorate('callHooks', new CallHooks(config.limits.hookTimeoutMs))
  app.decorate('warmUp', () => warmValidators(schemaController.compilersFactory?.buildValidator))
  installErrorHandling(app)
  installBodyTimeout(app, config.limits.bodyTimeoutMs)
  installConnectionCaps(app, config)
  installOllamaListener(app, config)

  // Ollama's clients and curl's `-d` do not always say `application/json`; every body here is JSON. Bodies nested
  // deeper than any real request are refused before parsing: handlers that walk a body (images, tool calls)
  // would otherwise overflow the stack on a few kilobytes of brackets.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  const parseChecked: typeof parseJson = (request, body, done) => {
    if (typeof body === 'string' && exceedsJsonDepth(body, MAX_JSON_DEPTH)) {
      done(new GatewayError(400, `request body is nested more than ${MAX_JSON_DEPTH} levels deep`, { code: 'too_deep' }), undefined)
      return
    }
    parseJson(request, body, done)
  }
  app.removeContentTypeParser(['text/plain', 'application/json'])
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseChecked)
  app.addContentTypeParser('*', { parseAs: 'string' }, parseChecked)

  try {
    for (const plugin of await builtinServerPlugins()) app.register(plugin)
    await registerAdminPlugins(app, config)
    await app.ready()
  } catch (err) {
    // Plugins that did start (a runtime process, say) must not outlive a failed start.
    await app.close().catch(() => {})
    throw err
  }
  return app as unknown as FastifyInstance
}

/** Connection caps in front of the app's HTTP server, which the Ollama listener hands its connections to as well. */
function installConnectionCaps (app: FastifyInstance, config: Config): void {
  const connections = new ConnectionCaps({
    perClient: config.limits.connectionsPerClient,
    // On or off as the security plugin finds keys (auth.api_keys, the keys file).
    unauthenticated: config.limits.unauthenticatedConnections,
    log: app.log,
  })
  connections.guard(app.server)
  app.decorate('connections', connections)
  app.addHook('preClose', async () => { connections.stop() })
}

/**
 * `ollama_listen`: the same app on a second address (core/server/ollama-listener.ts), listening once every plugin is ready, so
 * that an address the user named, in use or not this machine's, stops the start with a ConfigError; `auto`'s (Ollama's
 * port), taken, is one warning and the start goes on. It takes no more connections as
 * the app starts closing, and what is still open on it is closed when the app's close is done.
 */
function installOllamaListener (app: FastifyInstance, config: Config): void {
  const listener = config.ollamaListen === null ? null : new OllamaListener(config.ollamaListen, app.server)
  app.decorate('ollamaListener', listener)
  if (listener === null) return
  app.addHook('onReady', async () => {
    const refused = await listener.start()
    if (refused === null) app.startupNotes.push(`Ollama's clients on ${listener.url} (native streams NDJSON unless asked for SSE)`)
    // `auto`: Ollama itself (or another llamagate) has its port; Ollama's clients reach that one, which is the user's to know.
    else app.log.warn(`not serving Ollama's clients at ${listener.url}: ${refused}; they reach llamagate at its main address, with their base URL set (ollama_listen: off to not try)`)
  })
  app.addHook('preClose', async () => { listener.stop() })
  app.addHook('onClose', async () => { listener.end() })
}
