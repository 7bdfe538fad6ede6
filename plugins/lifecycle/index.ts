import { access, constants } from 'node:fs/promises'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { GatewayError, UnavailableError } from '../../core/errors.js'
import { InFlight } from './in-flight.js'
import { Preloader } from './preloader.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness, preloading and graceful drain: what an orchestrator (Kubernetes, systemd) talks to. */
    lifecycle: Lifecycle
  }
}

export interface Lifecycle {
  /** True once a drain began: /readyz says 503 and new work is refused. */
  readonly draining: boolean
  /** Requests through the door and not yet ended (probes and scrapes not counted): what a drain waits for. */
  readonly inFlight: number
  /**
   * Stops taking new work and waits for the requests in flight (answers, pulls) to end, up to `timeoutMs` or until
   * `cut` aborts; 'drained' or 'timeout' says which. Closing the app afterwards stops the runtimes.
   */
  drain (timeoutMs: number, cut?: AbortSignal): Promise<'drained' | 'timeout' | 'cut'>
  /** Why the server is not ready, in full and in words that name nothing (for callers without a key); empty when it is. */
  notReady (): Promise<NotReady[]>
  /** Aborted when a drain gives up waiting: long work of its own (a pull) ends on it, with an error event. */
  readonly cutSignal: AbortSignal
}

// During a drain these still answer: reading what is there changes nothing.
const READ_ONLY_POSTS = new Set(['/api/show'])
const DRAIN_RETRY_AFTER_S = 5
// After the cut, what has not ended within this (an upload, a conversion) has its connection closed.
const CUT_GRACE_MS = 2000

const LiveReply = Type.Object({ status: Type.Literal('alive') })
/** A reason the server is not ready: in full (names, paths, log lines) and plain, for a caller without a key. */
export interface NotReady { full: string, plain: string }
const WITH_KEY = '(details with an API key)'

const ReadyReply = Type.Object({ status: Type.Union([Type.Literal('ready'), Type.Literal('not ready')]), reasons: Type.Array(Type.String()) })

const lifecycle: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  const inFlight = new InFlight()
  const ends = new WeakMap<object, () => void>()
  let draining = false
  const cutter = new AbortController()
  const preloads = [...config.models].filter(([, m]) => m.preload)
    .map(([name, m]) => ({ name, keepAliveMs: m.keepAliveMs === undefined || m.keepAliveMs < 0 ? Infinity : m.keepAliveMs }))
  const preloader = new Preloader(preloads, async (name, keepAliveMs) => {
    const kind = app.store.get(name).kind ?? 'chat'
    await app.scheduler.load(name, { keepAliveMs, purpose: kind === 'chat' ? 'generate' : kind === 'embedding' ? 'embed' : 'rerank' })
  }, app.log)

  const state: Lifecycle = {
    get draining () { return draining },
    get inFlight () { return inFlight.size },
    async drain (timeoutMs, cut) {
      // New requests are refused at the door (the hook below); those already through it are served, even if they
      // reach the scheduler only now (a large body still arriving). Only the preloads, nobody's request, stop here.
      draining = true
      preloader.stop()
      app.log.info({ inFlight: inFlight.size, timeoutMs }, 'draining: new work is refused; waiting for the requests in flight')
      let timer: NodeJS.Timeout | undefined
      const outcome = await Promise.race([
        inFlight.idle().then(() => 'drained' as const),
        new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) }),
        new Promise<'cut'>((resolve) => { if (cut?.aborted) resolve('cut'); else cut?.addEventListener('abort', () => resolve('cut'), { once: true }) }),
      ])
      clearTimeout(timer)
      if (outcome === 'drained') {
        app.log.info('drained: no request in flight')
        return outcome
      }
      app.log.warn({ inFlight: inFlight.size }, outcome === 'timeout' ? `drain timeout (${timeoutMs / 1000} s): cutting what is left` : 'drain cut short: cutting what is left')
      // Answers end with an error event as their models stop, pulls on the cut signal; closing the app would
      // otherwise wait for every response to end on its own.
      cutter.abort(new UnavailableError('the server is shutting down'))
      await app.scheduler.unloadAll()
      let grace: NodeJS.Timeout | undefined
      await Promise.race([inFlight.idle(), new Promise((resolve) => { grace = setTimeout(resolve, CUT_GRACE_MS) })])
      clearTimeout(grace)
      if (inFlight.size > 0) app.server.closeAllConnections()
      return outcome
    },
    cutSignal: cutter.signal,
    async notReady () {
      const reasons: NotReady[] = []
      if (draining) reasons.push({ full: 'draining: the server is shutting down', plain: 'draining: the server is shutting down' })
      if (app.launcher.backend() === null) reasons.push({ full: `no llama.cpp runtime chosen: ${app.runtimes.reason}`, plain: `no llama.cpp runtime chosen ${WITH_KEY}` })
      try {
        await access(config.modelsDir, constants.R_OK | constants.X_OK)
      } catch (err) {
        reasons.push({ full: `the models folder ${config.modelsDir} cannot be read: ${(err as Error).message}`, plain: `the models folder cannot be read ${WITH_KEY}` })
      }
      for (const full of preloader.pending()) reasons.push({ full, plain: `models named for preloading are not loaded yet ${WITH_KEY}` })
      return reasons
    },
  }
  app.decorate('lifecycle', state)

  // Callback-style hooks, as on every hook a request passes: an async one costs each request a promise and a turn.
  app.addHook('onRequest', (request, reply, done) => {
    // Probes and scrapes (routes marked `probe`) are not work to wait for, and must keep answering while the rest drains.
    if (request.routeOptions.config.probe === true) { done(); return }
    if (draining && !['GET', 'HEAD', 'OPTIONS'].includes(request.method) && !READ_ONLY_POSTS.has(request.url.split('?')[0]!)) {
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
    const reasons = await state.notReady()
    const told = [...new Set(reasons.map((r) => request.keyHolder ? r.full : r.plain))]
    return reply.code(reasons.length === 0 ? 200 : 503).send({ status: reasons.length === 0 ? 'ready' : 'not ready', reasons: told })
  })

  app.addHook('onReady', async () => { preloader.start() })
  app.addHook('onClose', async () => { preloader.stop() })
}

export default fp(lifecycle, { name: 'lifecycle', dependencies: ['security', 'storage', 'llama-cpp', 'scheduler'] })
