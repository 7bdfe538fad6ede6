import type { FastifyInstance } from 'fastify'
import type { ConfigFlags } from '../../platform/config.js'
import { OLLAMA_API_VERSION, version } from '../../base/version.js'
import type { Command } from './command.js'

/** How long closing may take, after the drain, before the process gives up waiting and exits anyway. */
const SHUTDOWN_GRACE_MS = 20_000

export const serve: Command = {
  name: 'serve',
  summary: 'start the server',
  usage: ['llamagate serve [--host HOST] [--port PORT] [--config FILE] [--models DIR]'],
  flags: [
    '--host HOST      address to listen on (default 127.0.0.1)',
    '--port PORT      port to listen on (default 11435)',
    '--config FILE    config file (default: $LLAMAGATE_CONFIG, else the shipped config.yaml)',
    '--models DIR     models folder',
  ],
  options: { host: { type: 'string' }, port: { type: 'string' }, config: { type: 'string' }, models: { type: 'string' } },
  positionals: { min: 0, max: 0 },
  async run ({ values, stderr }) {
    // Loaded here, not at the top: the client commands must start without the server's modules.
    const { loadConfigAndPlugins } = await import('../../platform/plugin-manifests.js')
    const { config, manifests } = await loadConfigAndPlugins(values as ConfigFlags)
    // What the plugins must say before the start (an address open without keys): a refusal stops it here.
    const warnings: string[] = []
    for (const manifest of manifests) {
      const check = await manifest.startCheck?.(config) ?? {}
      if (check.refusal !== undefined) {
        stderr.write(`llamagate: refusing to start: ${check.refusal}\n`)
        return 2
      }
      warnings.push(...check.warnings ?? [])
    }
    const { buildApp } = await import('../../server/app.js')
    const { batchedStdout } = await import('../../base/log-stream.js')
    const app = await buildApp(config, { logger: { level: config.logLevel, stream: batchedStdout() } })
    installShutdown(app)
    const { host, port, configFile } = app.config
    const address = await app.listen({ host, port })
    app.log.info(`llamagate ${version()} (Ollama API ${OLLAMA_API_VERSION}) listening on ${address} (config: ${configFile ?? 'built-in defaults'}; ${app.startupNotes.join('; ') || 'no runtime plugin'})`)
    // Its own line at warn level, so that it stands out of the start-up log and reaches log filters.
    for (const warning of warnings) app.log.warn(`WARNING: ${warning}`)
    // Listening first: a client that connects at once is not kept waiting for it.
    setImmediate(() => app.warmUp())
    return new Promise<number>(() => {}) // runs until a signal ends the process
  },
}

/**
 * SIGTERM and SIGINT drain first: /readyz turns 503, new work gets 503 with Retry-After, answers and pulls in flight
 * finish (up to shutdown.drain_timeout); then closing the app stops every child process its plugins started, and
 * only then does the process exit. A second signal, or the timeout, cuts what is left (streams end with an error).
 */
function installShutdown (app: FastifyInstance): void {
  let closing = false
  const cut = new AbortController()
  const shutdown = (reason: string, code: number): void => {
    if (closing) {
      if (!cut.signal.aborted) {
        app.log.warn(`${reason} while draining: cutting the requests in flight`)
        cut.abort()
      } else {
        app.log.warn(`${reason} while shutting down: still waiting for running models to stop`)
      }
      return
    }
    closing = true
    const drainMs = code === 0 ? app.config.shutdown.drainTimeoutMs : 0
    app.log.info(`${reason}: shutting down${drainMs > 0 ? ` (draining for up to ${drainMs / 1000} s)` : ''}`)
    setTimeout(() => {
      app.log.error(`shutdown took over ${(drainMs + SHUTDOWN_GRACE_MS) / 1000}s; exiting anyway`)
      process.exit(1)
    }, drainMs + SHUTDOWN_GRACE_MS).unref()
    app.lifecycle.drain(drainMs, cut.signal)
      .then(() => { cut.abort(); return app.close() })
      .then(() => process.exit(code), (err) => {
        app.log.error({ err }, 'error while shutting down')
        process.exit(1)
      })
  }
  process.on('SIGINT', () => shutdown('SIGINT', 0))
  process.on('SIGTERM', () => shutdown('SIGTERM', 0))
  process.on('uncaughtException', (err) => { app.log.fatal({ err }, 'uncaught exception'); shutdown('uncaught exception', 1) })
  process.on('unhandledRejection', (err) => { app.log.fatal({ err }, 'unhandled rejection'); shutdown('unhandled rejection', 1) })
}
