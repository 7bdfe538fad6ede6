import type { BackendSpec, Backends } from '../../core/platform/backends.js'
import { BackendClient } from './backend-client.js'
import type { UpstreamCatalog, UpstreamWatch } from './upstream-catalog.js'
import type { UpstreamConfig, UpstreamLimits } from './upstream-config.js'
import { UpstreamEndpoint } from './upstream-endpoint.js'
import { upstreamReadLimits } from './upstream-limits.js'

const BACKEND_NAME = /^[A-Za-z0-9._-]{1,64}$/

/**
 * Plugins' backends (`app.backends`, core/platform/backends.ts), each one more upstream of the catalog: listed, found and
 * leased as config.yaml's are (the same per-key line, quotas, usage, metrics), spoken to through its plugin's `fetch`
 * (backend-client.ts) as an OpenAI-compatible engine: the other paths go through the upstreams' detours.
 */
export class PluginBackends implements Backends {
  private readonly specs = new Map<UpstreamConfig, BackendSpec>()

  constructor (private readonly catalog: UpstreamCatalog, private readonly limits: UpstreamLimits) {}

  add (spec: BackendSpec): void {
    if (typeof spec?.name !== 'string' || !BACKEND_NAME.test(spec.name)) throw new Error(`a backend's name must be 1-64 of A-Z a-z 0-9 . _ - (got ${JSON.stringify(spec?.name)})`)
    if (typeof spec.fetch !== 'function' || typeof spec.models !== 'function') throw new Error(`backend "${spec.name}" needs a models() and a fetch() function`)
    for (const field of ['maxConcurrent', 'timeoutMs'] as const) {
      const value = spec[field]
      if (value !== undefined && !(Number.isInteger(value) && value >= 1)) throw new Error(`backend "${spec.name}": ${field} must be a whole number of at least 1 (got ${JSON.stringify(value)})`)
    }
    const upstream: UpstreamConfig = {
      name: spec.name, url: `plugin:${spec.name}`, kind: 'openai', key: null, models: [], prefix: '',
      maxConcurrent: spec.maxConcurrent ?? 16, messages: 'convert', limits: this.limits, plugin: true,
    }
    this.catalog.add({ upstream, watch: new BackendWatch(spec) })
    this.specs.set(upstream, spec)
  }

  /** How requests reach a model of a plugin's backend, or null for an upstream of config.yaml. */
  endpoint (upstream: UpstreamConfig, remoteModel: string): UpstreamEndpoint | null {
    const spec = this.specs.get(upstream)
    if (spec === undefined) return null
    const client = new BackendClient(spec, upstreamReadLimits(`${remoteModel} (backend ${spec.name})`, upstream.limits))
    return new UpstreamEndpoint(upstream, remoteModel, client)
  }
}

/** A backend as the catalog watches an upstream: always there, its models what it lists now. */
class BackendWatch implements UpstreamWatch {
  private last: UpstreamWatch['state'] = { healthy: true, models: [], error: null, checkedAt: Date.now() }

  constructor (private readonly spec: BackendSpec) {}

  /** A new object only when the list changed: the catalog rebuilds its index then. */
  get state (): UpstreamWatch['state'] {
    let models: readonly string[]
    try {
      models = this.spec.models()
    } catch (err) {
      // A plugin's failing list must not fail every request that looks a name up: the last list stands.
      if (this.last.error === null) this.last = { ...this.last, error: `its models() threw: ${(err as Error)?.message ?? String(err)}` }
      return this.last
    }
    if (this.last.error !== null) this.last = { ...this.last, error: null }
    if (models.length !== this.last.models.length || models.some((m, i) => m !== this.last.models[i])) {
      this.last = { ...this.last, models: [...models] }
    }
    return this.last
  }

  claims (name: string): boolean { return this.spec.claims?.(name) === true }
  start (): void {}
  stop (): void {}
  async probeNow (): Promise<void> {}
}
