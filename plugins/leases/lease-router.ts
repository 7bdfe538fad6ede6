import { EventHub } from '../../core/base/event-hub.js'
import { ModelNotFoundError } from '../../core/base/errors.js'
import type { LeaseEvents } from './lease-events.js'
import type { AcquireRequest, Lease, LeaseSource } from './lease.js'

/** Requests in flight and waiting, by model name. */
export type RequestCounts = Map<string, { inFlight: number, queued: number }>

/** What Ollama's load form needs of a source: a load without a slot, and an unload once idle. */
export interface Loader {
  load(name: string, request: AcquireRequest): Promise<void>
  expire(name: string): Promise<void>
}

/** The source of the models stored here (the scheduler): it serves every name the store has. */
export interface StoredLeases extends LeaseSource, Loader {
  storedHere(name: string): boolean
  /** This gateway's requests in flight on a stored model and its slots (a model not loaded: room for one). */
  localLoad(name: string): { active: number, limit: number }
  requestCounts(): RequestCounts
}

/**
 * Another source of leases (config.yaml's upstreams, a plugin's backend): it serves the names it claims that no stored
 * model has, and may take a share of a stored model's requests where it serves the same model too (replicas).
 * The gateway's side of the one backend contract: a plugin's backend is a BackendSpec (core/backends.ts), which the
 * upstreams plugin serves through this, so the lease books, the per-key line and salting stay inside.
 */
export interface LeaseBackend {
  /** Its name, for messages. */
  readonly name: string
  /** The name `name` is served under when this backend claims it, else null. */
  claims(name: string): string | null
  /** A lease on a model it claims. @throws ModelNotFoundError when it no longer does, QueueFullError, RuntimeError */
  acquire(name: string, request: AcquireRequest): Promise<Lease>
  /**
   * For a stored model it serves too: a lease for `request` there, or null to leave the request here (`localLoad`:
   * this gateway's requests in flight on it and its slots).
   */
  share?(name: string, request: AcquireRequest, localLoad: () => { active: number, limit: number }): Promise<Lease> | null
  requestCounts(): RequestCounts
}

/**
 * Where a request's lease comes from: a model stored here is served by the stored models' source (the scheduler),
 * unless a backend serving it too takes the request (replicas); a name no stored model has is the first backend's
 * that claims it. The sources know nothing of each other: each registers here (plugins/leases/index.ts).
 */
export class LeaseRouter implements LeaseSource, Loader {
  /** Every lease's first token and tokens, whichever source granted it: each source tells them here (metrics listen). */
  readonly events: EventHub<LeaseEvents>
  private stored: StoredLeases | null = null
  private readonly backends: LeaseBackend[] = []

  /** `onListenerError`: where an observer's failure is reported (it never reaches a lease). */
  constructor (onListenerError?: (err: unknown) => void) {
    this.events = new EventHub(onListenerError)
  }

  /** The source of the stored models: one, registered once. */
  serveStored (source: StoredLeases): void {
    if (this.stored !== null) throw new Error('the stored models already have a lease source')
    this.stored = source
  }

  /** Another backend, asked after the ones registered before it. */
  addBackend (backend: LeaseBackend): void {
    this.backends.push(backend)
  }

  modelName (name: string): string {
    const stored = this.local()
    if (stored.storedHere(name)) return stored.modelName(name)
    for (const backend of this.backends) {
      const served = backend.claims(name)
      if (served !== null) return served
    }
    return this.notFound(name)
  }

  storedHere (name: string): boolean {
    return this.local().storedHere(name)
  }

  async acquire (name: string, request: AcquireRequest = {}): Promise<Lease> {
    const stored = this.local()
    if (!stored.storedHere(name)) return this.claimant(name).acquire(name, request)
    const model = stored.modelName(name)
    if (request.here !== true) {
      for (const backend of this.backends) {
        const shared = backend.share?.(model, request, () => stored.localLoad(model))
        if (shared) return shared
      }
    }
    return stored.acquire(model, request)
  }

  /** Ollama's empty-prompt load; for a backend's model, a turn there that sends nothing. */
  async load (name: string, request: AcquireRequest = {}): Promise<void> {
    if (this.local().storedHere(name)) return this.local().load(name, request)
    const lease = await this.acquire(name, request)
    lease.release()
  }

  /** Ollama's `keep_alive: 0` load form: nothing of a backend's model is loaded here. */
  async expire (name: string): Promise<void> {
    if (this.local().storedHere(name)) return this.local().expire(name)
    this.claimant(name)
  }

  /** Requests in flight and queued by model, the stored models' and each backend's (a backend's model is named apart). */
  requestCounts (): RequestCounts {
    const counts = this.local().requestCounts()
    for (const backend of this.backends) for (const [name, count] of backend.requestCounts()) counts.set(name, count)
    return counts
  }

  private local (): StoredLeases {
    if (this.stored === null) throw new Error('no lease source serves the stored models')
    return this.stored
  }

  /** @throws the store's InvalidModelNameError or ModelNotFoundError when no backend claims the name either */
  private claimant (name: string): LeaseBackend {
    const backend = this.backends.find((b) => b.claims(name) !== null)
    return backend ?? this.notFound(name)
  }

  private notFound (name: string): never {
    // The store's own refusal says what is wrong with a name that is none.
    this.local().modelName(name)
    throw new ModelNotFoundError(name)
  }
}
