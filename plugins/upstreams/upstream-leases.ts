import type { UpstreamConfig } from './upstream-config.js'
import { ContextExceededError, GatewayError, ModelNotFoundError, RuntimeError, UnavailableError } from '../../core/base/errors.js'
import type { Options } from '../../core/config/options-schema.js'
import { resolveOptions, type ResolvedOptions } from '../../core/config/request-options.js'
import { watchedSink, withBodyFields, type ModelEndpoint } from '../../runtimes/index.js'
import type { EventHub } from '../../core/base/event-hub.js'
import { KeyLine } from '../leases/key-line.js'
import type { LeaseEvents } from '../leases/lease-events.js'
import type { AcquireRequest, Lease, LeaseModel } from '../leases/lease.js'
import type { LeaseBackend, RequestCounts } from '../leases/lease-router.js'
import { cacheSalt, grantLease, reserveTokens } from '../leases/lease-terms.js'

// What a lease says of a context it cannot know: the upstream's own refusal tells the real one.
const UNKNOWN_CONTEXT = 1 << 20

/** An upstream's model as a request asks for it (plugins/upstreams' catalog finds it). */
export interface UpstreamTarget {
  /** The name served here: the upstream's prefix and its own name. */
  name: string
  upstream: UpstreamConfig
  remoteModel: string
  healthy: boolean
  /** Why its last probe failed, when it is not healthy. */
  error?: string | null
}

/** What a request tells the catalog so that it can pick among upstreams offering its model (plugins/upstreams' UpstreamRoute). */
export interface UpstreamRouteHints {
  /** Its conversation's start, read only when several upstreams offer the model. */
  affinity?: () => string
  /** An upstream's requests in flight and its max_concurrent. */
  load?: (upstream: string) => { active: number, limit: number }
  /** Upstreams this request failed on: another, or null. */
  exclude?: ReadonlySet<string>
}

/** What the leases need of the upstreams' catalog (upstream-catalog.ts) to serve their models. */
export interface UpstreamDirectory {
  /** Where a request for `name` goes (`route`: a request about to be sent), or null when no upstream offers it. */
  find(name: string, route?: UpstreamRouteHints): UpstreamTarget | null
  /**
   * For a model stored here that upstreams list under the same name: the upstream `route` goes to, or null to serve
   * it here (`localLoad`: this gateway's requests in flight on it and its slots).
   */
  share(name: string, route: UpstreamRouteHints, localLoad: () => { active: number, limit: number }): UpstreamTarget | null
  /** A request to it failed: ask it again now, so that the listings follow. */
  recheck(upstream: UpstreamConfig): Promise<void>
  /** How requests reach one of its models (upstream-endpoint.ts). */
  endpoint(upstream: UpstreamConfig, remoteModel: string): UpstreamModelEndpoint
}

/** One model of an upstream, as surfaces speak to it, with connections of its own to close. */
export type UpstreamModelEndpoint = ModelEndpoint & { close(): Promise<void> }

// What an upstream's request is taken to hold its turn for until its own are measured: a refusal's retry hint.
const FIRST_GUESS_MS = 1000

export interface UpstreamLeasesOptions {
  upstreams: UpstreamDirectory
  /** config.yaml's `default_options` and `models.<name>.options`: an upstream's model takes options as a local one. */
  defaultOptions: Options
  modelOptions(name: string): Options | undefined
  /** limits.queue_length: requests waiting per upstream past its max_concurrent (in turns by API key). */
  queueLength: number
  /** Where its leases tell their first token and tokens, as every lease does (the lease router's: metrics). */
  events: EventHub<LeaseEvents>
}

/**
 * Leases on upstreams' models: nothing to load, at most an upstream's max_concurrent requests sent to it at once (the
 * rest wait in its line, in turns by API key, under the keys' rules, as a local model's: plugins/leases/key-line.ts), counted like a local lease's (the request's usage, its first token, its tokens), so
 * that keys, limits, usage and metrics apply alike. A request an upstream fails before any byte of its answer went
 * to the client (refused, a 5xx) moves to another healthy upstream offering the model, once per upstream; when none
 * is left it is a 502 naming the upstream. Each failed upstream is probed again at once.
 */
export class UpstreamLeases implements LeaseBackend {
  readonly name = 'upstreams'
  /** Each upstream's turns: its max_concurrent places and the requests waiting for one. */
  private readonly lines = new Map<string, KeyLine>()
  /** How long a turn on each upstream was last held (ms, smoothed): about one request's wait. */
  private readonly turnMs = new Map<string, number>()
  /** One per upstream and model: each keeps its own pooled connections. */
  private readonly endpoints = new Map<string, UpstreamModelEndpoint>()
  /** Aborted when the app closes: what is in flight ends with the reason. */
  private readonly closing = new AbortController()
  private readonly inFlight = new Map<string, { inFlight: number, queued: number }>()

  constructor (private readonly options: UpstreamLeasesOptions) {}

  /** The name `name` is served under when an upstream offers it (routed only for a request about to be sent). */
  claims (name: string): string | null {
    return this.options.upstreams.find(name)?.name ?? null
  }

  /** A turn on the upstream a request for `name` is routed to. @throws ModelNotFoundError when none offers it now */
  async acquire (name: string, request: AcquireRequest): Promise<Lease> {
    const target = this.options.upstreams.find(name, this.route(request))
    if (target === null) throw new ModelNotFoundError(name)
    return this.acquireOn(target, request)
  }

  /** A stored model that upstreams list too: a turn on the one routing picks, or null to serve it here. */
  share (name: string, request: AcquireRequest, localLoad: () => { active: number, limit: number }): Promise<Lease> | null {
    const target = this.options.upstreams.share(name, this.route(request), localLoad)
    return target === null ? null : this.acquireOn(target, request)
  }

  /**
   * Waits for a turn on the upstream. The options resolve as a local model's would (config.yaml's per-model options
   * under the served name), and go to the upstream as sampling; what would load a model means nothing there.
   * @throws QueueFullError, RuntimeError ('upstream_unavailable'), the signal's reason
   */
  async acquireOn (target: UpstreamTarget, request: AcquireRequest): Promise<Lease> {
    const started = performance.now()
    const { upstream, name } = target
    const resolved = resolveOptions({
      defaults: this.options.defaultOptions,
      configured: this.options.modelOptions(name),
      request: request.options,
      overrides: request.overrides,
    })
    if (resolved.unknown.length > 0) request.log?.warn({ unknown: resolved.unknown }, 'ignoring unknown options')
    const sampled = reserveTokens(resolved, request.usage, request.purpose === undefined || request.purpose === 'generate')
    if (this.closing.signal.aborted) throw this.closing.signal.reason
    // Its probe found it down: no need to reach for it to say so.
    if (!target.healthy) throw unavailable(upstream, name, target.error ?? 'it did not answer its last probe')
    const counts = this.countsOf(name)
    counts.queued++
    try {
      await this.takeTurn(upstream, name, request)
    } finally {
      counts.queued--
    }
    counts.inFlight++
    return this.lease(target, sampled, started, request)
  }

  /** What the catalog needs to route `request`: its conversation, and each upstream's load as counted here. */
  route (request: AcquireRequest): UpstreamRouteHints {
    return {
      ...(request.affinity ? { affinity: request.affinity } : {}),
      load: (upstream) => {
        const line = this.lines.get(upstream)
        return line ? { active: line.active, limit: line.places } : { active: 0, limit: 1 }
      },
    }
  }

  /** Requests in flight and waiting, by model name (metrics' gauges, beside the local models'). */
  requestCounts (): RequestCounts {
    return new Map([...this.inFlight].filter(([, c]) => c.inFlight + c.queued > 0).map(([name, c]) => [name, { ...c }]))
  }

  /** Ends what is in flight and closes every connection: the app is closing. */
  async close (): Promise<void> {
    this.closing.abort(new UnavailableError('the server is shutting down'))
    for (const line of this.lines.values()) line.dismiss()
    await Promise.all([...this.endpoints.values()].map((e) => e.close()))
    this.endpoints.clear()
  }

  private countsOf (name: string): { inFlight: number, queued: number } {
    let counts = this.inFlight.get(name)
    if (!counts) this.inFlight.set(name, counts = { inFlight: 0, queued: 0 })
    return counts
  }

  /** A turn on the upstream, in its line. @throws QueueFullError, the key's TooManyRequestsError, the signal's reason */
  private async takeTurn (upstream: UpstreamConfig, name: string, request: AcquireRequest, signal = request.signal): Promise<void> {
    let line = this.lines.get(upstream.name)
    if (!line) this.lines.set(upstream.name, line = new KeyLine(Math.max(1, upstream.maxConcurrent)))
    const terms = { model: name, queueLength: this.options.queueLength, oneRequestMs: () => this.turnMs.get(upstream.name) ?? FIRST_GUESS_MS }
    // The line is dismissed only when the app closes.
    if (!await line.take(terms, { signal, usage: request.usage })) throw this.closing.signal.reason
  }

  /** A turn is over after `heldMs`: the next in line takes it. */
  private handBack (upstream: UpstreamConfig, heldMs?: number): void {
    if (heldMs !== undefined) this.turnMs.set(upstream.name, Math.round(0.8 * (this.turnMs.get(upstream.name) ?? heldMs) + 0.2 * heldMs))
    this.lines.get(upstream.name)?.handOver()
  }

  private endpointOf (upstream: UpstreamConfig, remoteModel: string): UpstreamModelEndpoint {
    const key = `${upstream.name}\0${remoteModel}`
    let endpoint = this.endpoints.get(key)
    if (!endpoint) this.endpoints.set(key, endpoint = this.options.upstreams.endpoint(upstream, remoteModel))
    return endpoint
  }

  private lease (target: UpstreamTarget, resolved: ResolvedOptions, started: number, request: AcquireRequest): Lease {
    const { name } = target
    // Where the request goes now: another upstream after a failover.
    let current = target
    // The upstream whose turn this lease holds: none for the moment it waits for a turn on the next one.
    let holding: UpstreamConfig | null = target.upstream
    const tried = new Set<string>()
    let released = false
    // The upstream's own context, once it refused a prompt as too long.
    let knownContext: number | null = null
    /** The error the client is told, or null when the upstream failed (it is probed again). */
    const failure = (err: unknown, signal: AbortSignal): unknown => {
      if (signal.aborted) return err
      if (err instanceof ContextExceededError) { knownContext = err.contextLength; return err }
      // Its 4xx are about the request (llama-server's own, passed through); gateway bugs go to the error handler as they are.
      if (err instanceof GatewayError && !(err instanceof RuntimeError)) return err
      if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return err
      void this.options.upstreams.recheck(current.upstream).catch(() => {})
      return null
    }
    const fail = (err: unknown, signal: AbortSignal): unknown => failure(err, signal) ?? unavailable(current.upstream, name, (err as Error).message)
    // Nothing went to the client yet: the request may go to another upstream, holding a turn there instead.
    const failOver = async (err: unknown, signal: AbortSignal): Promise<void> => {
      const told = failure(err, signal)
      if (told !== null) throw told
      tried.add(current.upstream.name)
      const next = this.options.upstreams.find(name, { ...this.route(request), exclude: tried })
      if (next === null || released) throw unavailable(current.upstream, name, (err as Error).message)
      this.handBack(current.upstream)
      holding = null
      await this.takeTurn(next.upstream, name, request, signal)
      // Released while it waited: the turn just taken goes straight back.
      if (released) { this.handBack(next.upstream); throw unavailable(current.upstream, name, (err as Error).message) }
      holding = next.upstream
      current = next
    }
    return grantLease({
      model: upstreamModel(name),
      endpoint: guarded(() => saltedFor(current.upstream, this.endpointOf(current.upstream, current.remoteModel), request.usage?.cacheGroup), fail, failOver),
      sampling: resolved.sampling,
      contextLength: UNKNOWN_CONTEXT,
      started,
      usage: request.usage,
      signal: this.closing.signal,
      clientSignal: request.signal,
      events: this.options.events,
      fitPrompt: async () => ({ grown: false, limit: knownContext ?? UNKNOWN_CONTEXT, why: ` (the model runs on upstream "${current.upstream.name}")` }),
      release: (heldMs) => {
        released = true
        this.countsOf(name).inFlight--
        if (holding !== null) this.handBack(holding, heldMs)
      },
    })
  }
}

/** What surfaces read of a lease's model: an upstream's has no file here, so nothing of a GGUF is known. */
function upstreamModel (name: string): LeaseModel {
  return { name, format: 'remote', size: 0, parameters: null, template: null, kind: 'chat', gguf: null }
}

/** The message names the upstream and the model; the upstream's key lives in a header and its URL carries none (config.ts). */
function unavailable (upstream: UpstreamConfig, model: string, why: string): RuntimeError {
  const said = upstream.key === null ? why : why.split(upstream.key).join('***')
  return new RuntimeError(`${upstream.plugin === true ? 'backend' : 'upstream'} "${upstream.name}" is unavailable for model "${model}": ${said}`, [], 'upstream_unavailable')
}

/**
 * The endpoint as a lease hands it out: the current upstream's (`endpoint()`), with failures turned into what the
 * client is told (`fail`). A call that failed before any byte went to the client is handed to `failOver`, which
 * moves the lease to another upstream or throws, and is made again there; a stream already open is not moved. Each
 * call asks `endpoint()` anew: the endpoint's own state (its pool) stays the one object's.
 */
function guarded (endpoint: () => ModelEndpoint, fail: (err: unknown, signal: AbortSignal) => unknown, failOver: (err: unknown, signal: AbortSignal) => Promise<void>): ModelEndpoint {
  // A whole answer went nowhere until it was whole: failing anywhere, it may be asked again elsewhere.
  const moving = async <T>(call: () => Promise<T>, signal: AbortSignal): Promise<T> => {
    for (;;) {
      try { return await call() } catch (err) { await failOver(err, signal) }
    }
  }
  return {
    post: (path, body, signal) => moving(() => endpoint().post(path, body, signal), signal),
    postJson: <T>(path: string, body: unknown, signal: AbortSignal) => moving(() => endpoint().postJson<T>(path, body, signal), signal),
    events: async (path, body, signal) => {
      // Failing before its first event (refused, a 5xx status), the stream never began.
      const events = await moving(() => endpoint().events(path, body, signal), signal)
      return (async function * () {
        try { yield * events } catch (err) { throw fail(err, signal) }
      })()
    },
    relay: async (path, payload, sink, progress, signal) => {
      const watched = watchedSink(sink)
      for (;;) {
        try {
          return await endpoint().relay(path, payload, watched.sink, progress, signal)
        } catch (err) {
          // The head went out: the client has part of this upstream's answer, which ends with the error event.
          if (watched.opened()) throw fail(err, signal)
          await failOver(err, signal)
        }
      }
    },
  }
}

/**
 * An upstream's endpoint as a request of a cache group reaches it: a llamagate keeps the salt within the front's key's
 * group, vLLM and SGLang honour it as their own; Ollama has no such field, and is sent none.
 */
function saltedFor (upstream: UpstreamConfig, endpoint: ModelEndpoint, group: string | undefined): ModelEndpoint {
  if (group === undefined || upstream.kind === 'ollama') return endpoint
  return withBodyFields(endpoint, { cache_salt: cacheSalt(group) })
}
