import { ModelNotFoundError } from '../../core/errors.js'
import type { Loader } from '../inference/load-form.js'
import type { AcquireRequest, Lease, LeaseSource } from '../scheduler/lease.js'
import type { UpstreamDirectory, UpstreamLeases, UpstreamTarget } from './upstream-leases.js'

/** What the router needs of the scheduler: the models stored here, served by this gateway's own runtimes. */
export interface LocalLeases extends LeaseSource, Loader {
  storedHere(name: string): boolean
  /** This gateway's requests in flight on a stored model and its slots (a model not loaded: room for one). */
  localLoad(name: string): { active: number, limit: number }
  requestCounts(): Map<string, { inFlight: number, queued: number }>
}

/**
 * Where a request's lease comes from, in front of the scheduler: a model stored here is served by the scheduler,
 * unless upstreams list it too and routing sends the request to one of them (replicas); a name no stored model has
 * is an upstream's. The scheduler knows nothing of upstreams; the upstreams' leases know nothing of runtimes.
 */
export class LeaseRouter implements LeaseSource, Loader {
  constructor (private readonly deps: { local: LocalLeases, upstreams: Pick<UpstreamDirectory, 'find' | 'share'>, leases: UpstreamLeases }) {}

  modelName (name: string): string {
    return this.deps.local.storedHere(name) ? this.deps.local.modelName(name) : this.upstreamFor(name).name
  }

  storedHere (name: string): boolean {
    return this.deps.local.storedHere(name)
  }

  async acquire (name: string, request: AcquireRequest = {}): Promise<Lease> {
    const { local, leases } = this.deps
    if (!local.storedHere(name)) return leases.acquire(this.upstreamFor(name, request), request)
    const stored = local.modelName(name)
    const shared = request.here === true ? null : this.deps.upstreams.share(stored, leases.route(request), () => local.localLoad(stored))
    return shared === null ? local.acquire(stored, request) : leases.acquire(shared, request)
  }

  /** Ollama's empty-prompt load; for an upstream's model, a turn there that sends nothing. */
  async load (name: string, request: AcquireRequest = {}): Promise<void> {
    if (this.deps.local.storedHere(name)) return this.deps.local.load(name, request)
    const lease = await this.acquire(name, request)
    lease.release()
  }

  /** Ollama's `keep_alive: 0` load form: nothing of an upstream's model is loaded here. */
  async expire (name: string): Promise<void> {
    if (this.deps.local.storedHere(name)) return this.deps.local.expire(name)
    this.upstreamFor(name)
  }

  /** Requests in flight and queued by model, this gateway's and the upstreams' (an upstream's model is named apart). */
  requestCounts (): Map<string, { inFlight: number, queued: number }> {
    const counts = this.deps.local.requestCounts()
    for (const [name, count] of this.deps.leases.requestCounts()) counts.set(name, count)
    return counts
  }

  /**
   * The upstream model a name no stored model has reaches, routed only for a request about to be sent.
   * @throws the store's InvalidModelNameError or ModelNotFoundError when no upstream offers it either
   */
  private upstreamFor (name: string, request?: AcquireRequest): UpstreamTarget {
    const found = this.deps.upstreams.find(name, request ? this.deps.leases.route(request) : undefined)
    if (found !== null) return found
    this.deps.local.modelName(name)
    throw new ModelNotFoundError(name)
  }
}
