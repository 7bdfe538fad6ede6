import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { BUILTIN_PLUGINS } from '../plugins/index.js'
import type { Config } from './config.js'
import { installErrorHandling } from './error-handler.js'
import { registerAdminPlugins } from './plugin-loader.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The resolved configuration. */
    config: Config
    /** Lines for the start-up log (the chosen runtime and why, ...); plugins add to it. */
    startupNotes: string[]
  }
}

export interface BuildOptions {
  /** Fastify logger options; defaults to pino at the configured level. */
  logger?: boolean | Record<string, unknown>
}

/**
 * Builds the app with every plugin registered and ready, without listening: tests drive it with `inject`
 * or `listen()` alike.
 */
export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.limits.bodySize,
    // Per-request log lines cost time on every streamed request; errors are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: {
      // Wrong types are the client's mistake to hear about, not to have silently converted.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  app.decorate('startupNotes', [] as string[])
  installErrorHandling(app)

  // Ollama's clients and curl's `-d` do not always say `application/json`; every body here is JSON.
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser('*', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  for (const plugin of BUILTIN_PLUGINS) app.register(plugin)
  try {
    await registerAdminPlugins(app, config.plugins)
    await app.ready()
  } catch (err) {
    // Plugins that did start (a runtime process, say) must not outlive a failed start.
    await app.close().catch(() => {})
    throw err
  }
  return app as unknown as FastifyInstance
}
