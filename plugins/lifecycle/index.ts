import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { GatewayError } from '../../core/base/errors.js'
import { InFlight } from './in-flight.js'
import { Preloader } from './preloader.js'
import { Readiness, type Lifecycle } from './readiness.js'
import { loadPurpose } from '../leases/lease.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness, preloading and graceful drain: what an orchestrator (Kubernetes, systemd) talks to. */
    lifecycle: Lifecycle
  }
}

const DRAIN_RETRY_AFTER_S = 5

const LiveReply = Type.Object({ status: Type.Literal('alive') })
const ReadyReply = Type.Object({ status: Type.Union([Type.Literal('ready'), Type.Literal('not ready')]), reasons: Type.Array(Type.String()) })

const lifecycle: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  const inFlight = new InFlight()
  const ends = new WeakMap<object, () => void>()
  const preloads = [...config.models].filter(([, m]) => m.preload)
    .map(([name, m]) => ({ name, keepAliveMs: m.keepAliveMs === undefined || m.keepAliveMs < 0 ? Infinity : m.keepAliveMs }))
  const preloader = new Preloader(preloads, async (name, keepAliveMs) => {
    await app.scheduler.load(name, { keepAliveMs, purpose: loadPurpose(app.store.get(name).kind) })
  }, app.log)
  const readiness = new Readiness({
    inFlight,
    preloader,
    modelsDir: config.modelsDir,
    runtimeProblem: () => app.launcher.backend() === null ? app.runtimes.reason : null,
    unloadAll: () => app.scheduler.unloadAll(),
    closeAllConnections: () => { app.server.closeAllConnections() },
    log: app.log,
  })
  app.decorate('lifecycle', readiness)

  // Callback-style hooks, as on every hook a request passes: an async one costs each request a promise and a turn.
  app.addHook('onRequest', (request, reply, done) => {
    // Probes and scrapes (routes marked `probe`) are not work to wait for, and must keep answering while the rest drains.
    if (request.routeOptions.config.probe === true) { done(); return }
    if (readiness.refuses(request.method, request.url.split('?')[0]!)) {
      done(new GatewayError(503, 'the server is shutting down and takes no new work; try again on another instance or after it restarts', {
        code: 'draining', headers: { 'Retry-After': String(DRAIN_RETRY_AFTER_S) },
      }))
      return
    }
    const end = inFlight.begin()
    ends.set(request, end)
    // 'close' comes once the response is over, sent whole or cut by the client; onResponse covers injected requests.
    reply.raw.once('close', end)
    done()
  })
  app.addHook('onResponse', (request, _reply, done) => { ends.get(request)?.(); done() })

  // Kubernetes probes carry no API key: both are public, and say nothing a caller could misuse.
  app.get('/livez', { config: { public: true, probe: true }, schema: { response: { 200: LiveReply } } }, async () => ({ status: 'alive' as const }))
  // The reasons name models, folders and runtime log lines: in full only to a caller who may see them (keys off, or
  // a valid key sent); a probe without a key gets what kind of thing is wrong.
  app.get('/readyz', { config: { public: true, probe: true }, schema: { response: { 200: ReadyReply, 503: ReadyReply } } }, async (request, reply) => {
    const reasons = await readiness.notReady()
    const told = [...new Set(reasons.map((r) => request.keyHolder ? r.full : r.plain))]
    return reply.code(reasons.length === 0 ? 200 : 503).send({ status: reasons.length === 0 ? 'ready' : 'not ready', reasons: told })
  })

  app.addHook('onReady', async () => { preloader.start() })
  app.addHook('onClose', async () => { preloader.stop() })
}

export default fp(lifecycle, { name: 'lifecycle', dependencies: ['security', 'storage', 'llama-cpp', 'scheduler'] })
