import type { UpstreamConfig } from './upstream-config.js'
import { LOCAL, pickUpstream, type UpstreamRoute, type UpstreamRouting } from './upstream-routing.js'

/** What the catalog reads of an upstream's probe (runtimes' UpstreamProbe). */
export interface UpstreamWatch {
  /** A new object after each probe (runtimes' UpstreamState): what was made of one may be kept until it changes. */
  readonly state: { readonly healthy: boolean, readonly models: readonly string[], readonly error: string | null, readonly checkedAt: number }
  start(): void
  stop(): void
  probeNow(): Promise<void>
  /** Whether it serves `name` though it does not list it (a plugin's backend, core/platform/backends.ts). @default none */
  claims?(name: string): boolean
}

/** An upstream's model under the name it is served by here. */
export interface UpstreamModel {
  /** `prefix + remoteModel`. */
  name: string
  upstream: UpstreamConfig
  /** The name the upstream knows it by. */
  remoteModel: string
  /** Whether its upstream answered its last probe. */
  healthy: boolean
  /** When its upstream was last probed (ms since epoch; 0: not yet). */
  checkedAt: number
  /** Why its upstream's last probe failed, if it did. */
  error?: string | null
}

export interface UpstreamCatalogOptions {
  upstreams: Array<{ upstream: UpstreamConfig, watch: UpstreamWatch }>
  /** Whether a model of that name is stored here: it hides an upstream's of the same name in the lists, and shares its requests (`share`). */
  isLocal(name: string): boolean
  /** config.yaml's `upstream_routing`. @default 'prefix' */
  routing?: UpstreamRouting
}

/**
 * The models config.yaml's upstreams offer, as their probes last saw them: what the listings show and where a
 * request for one goes. Several healthy upstreams offering one model share its requests (upstream-routing.ts).
 */
export class UpstreamCatalog {
  private readonly entries: UpstreamCatalogOptions['upstreams'][number][]
  private readonly isLocal: (name: string) => boolean
  private readonly routing: UpstreamRouting
  /** Per model name: the turn of the next request among its healthy upstreams. */
  private readonly turns = new Map<string, number>()
  /** `models()` as made from the probes' states it was made of: asked several times by every request. */
  private built: { states: Array<UpstreamWatch['state']>, all: UpstreamModel[], byName: Map<string, UpstreamModel[]> } | null = null

  constructor (options: UpstreamCatalogOptions) {
    this.entries = [...options.upstreams]
    this.isLocal = options.isLocal
    this.routing = options.routing ?? 'prefix'
  }

  get size (): number { return this.entries.length }

  /** One more upstream (a plugin's backend), asked after those before it. @throws Error when its name is taken */
  add (entry: UpstreamCatalogOptions['upstreams'][number]): void {
    if (this.entries.some((e) => e.upstream.name === entry.upstream.name)) throw new Error(`the name "${entry.upstream.name}" is taken by another upstream or backend`)
    this.entries.push(entry)
  }

  start (): void {
    for (const { watch } of this.entries) watch.start()
  }

  stop (): void {
    for (const { watch } of this.entries) watch.stop()
  }

  /**
   * Where a request for `name` goes: a healthy upstream listing it (picked by `route` when several do), else one
   * whose last good probe listed it (so that the request hears why it is down), else null. Without `route` (a name
   * looked up, no request sent) the first healthy one, and no turn is used up. With `route.exclude` (failover) only
   * a healthy upstream not yet tried, or null. Names match regardless of case, as stored models' names do.
   */
  find (name: string, route?: UpstreamRoute): UpstreamModel | null {
    const key = name.toLowerCase()
    const exclude = route?.exclude
    // A stored model is served here, or by an upstream sharing it (`share`); a request moving off one goes to another.
    if (this.isLocal(name) && exclude === undefined) return null
    const offers = this.offersOf(key)
    const healthy = offers.filter((m) => m.healthy && exclude?.has(m.upstream.name) !== true)
    if (exclude !== undefined) return healthy.length === 0 ? null : healthy[this.pick(key, healthy, route!)]!
    if (offers.length === 0) return this.underDown(name) ?? this.claimed(name)
    if (healthy.length === 0) return offers[0]!
    return route === undefined ? healthy[0]! : healthy[this.pick(key, healthy, route)]!
  }

  /**
   * Where a request for a model stored here goes when healthy upstreams list it under the same name (replicas, or a
   * box with the same models: an upstream without a prefix): this gateway is one more candidate, its requests in
   * flight and slots `localLoad`, and the request is routed among them as among upstreams. Null: serve it here.
   */
  share (name: string, route: UpstreamRoute, localLoad: () => { active: number, limit: number }): UpstreamModel | null {
    const key = name.toLowerCase()
    const healthy = this.offersOf(key).filter((m) => m.healthy)
    if (healthy.length === 0) return null
    const { load } = route
    const shared: UpstreamRoute = { ...route, ...(load ? { load: (u) => u === LOCAL ? localLoad() : load(u) } : {}) }
    const at = this.pickAmong(key, [LOCAL, ...healthy.map((m) => m.upstream.name)], shared)
    return at === 0 ? null : healthy[at - 1]!
  }

  private pick (key: string, healthy: UpstreamModel[], route: UpstreamRoute): number {
    return this.pickAmong(key, healthy.map((m) => m.upstream.name), route)
  }

  private pickAmong (key: string, names: string[], route: UpstreamRoute): number {
    return pickUpstream(names, this.routing, route, () => {
      const turn = this.turns.get(key) ?? 0
      this.turns.set(key, turn + 1)
      return turn
    })
  }

  /**
   * A name under the prefix of an upstream that is down: its models are not known now, but the request is told why
   * rather than that the name is not one (a bare prefix, '', claims no name this way).
   */
  private underDown (name: string): UpstreamModel | null {
    const key = name.toLowerCase()
    const down = this.entries.find(({ upstream, watch }) => upstream.prefix !== '' && key.startsWith(upstream.prefix.toLowerCase()) &&
      !watch.state.healthy && watch.state.checkedAt > 0)
    if (!down) return null
    const { checkedAt, error } = down.watch.state
    return { name, upstream: down.upstream, remoteModel: name.slice(down.upstream.prefix.length), healthy: false, checkedAt, error }
  }

  /** A name a plugin's backend serves without listing it. */
  private claimed (name: string): UpstreamModel | null {
    const claimant = this.entries.find(({ watch }) => watch.claims?.(name) === true)
    if (claimant === undefined) return null
    const { upstream, watch: { state } } = claimant
    return { name, upstream, remoteModel: name.slice(upstream.prefix.length), healthy: state.healthy, checkedAt: state.checkedAt, error: state.error }
  }

  /** Every upstream model that a local one does not hide, the first upstream's first where several offer one name. */
  list (): UpstreamModel[] {
    const seen = new Set<string>()
    return this.models().filter((m) => {
      const key = m.name.toLowerCase()
      if (seen.has(key) || this.isLocal(m.name)) return false
      seen.add(key)
      return true
    })
  }

  /** Asks an upstream again now (after a request to it failed): the listings follow what it answers. */
  recheck (upstream: UpstreamConfig): Promise<void> {
    const entry = this.entries.find((e) => e.upstream === upstream)
    return entry ? entry.watch.probeNow() : Promise.resolve()
  }

  /** The upstream's probe state, by its name (tests, and /api/ps's remote models). */
  stateOf (name: string): UpstreamWatch['state'] | null {
    return this.entries.find((e) => e.upstream.name === name)?.watch.state ?? null
  }

  /** The upstream models named `key` (lower case), healthy ones first. */
  private offersOf (key: string): UpstreamModel[] {
    return this.index().byName.get(key) ?? []
  }

  /** Healthy ones first, so that `list` shows a model under an upstream that answers where one does. */
  private models (): UpstreamModel[] {
    return this.index().all
  }

  private index (): NonNullable<UpstreamCatalog['built']> {
    const states = this.entries.map(({ watch }) => watch.state)
    if (this.built !== null && states.every((state, i) => state === this.built!.states[i])) return this.built
    const made = this.entries.flatMap(({ upstream }, i) => {
      const { healthy, models, checkedAt, error } = states[i]!
      // config.yaml's `models` narrows what is served; empty: all it lists.
      const wanted = upstream.models.length === 0 ? models : models.filter((m) => upstream.models.includes(m))
      return wanted.map((remoteModel) => ({ name: upstream.prefix + remoteModel, upstream, remoteModel, healthy, checkedAt, error }))
    })
    const all = [...made.filter((m) => m.healthy), ...made.filter((m) => !m.healthy)]
    const byName = new Map<string, UpstreamModel[]>()
    for (const model of all) {
      const key = model.name.toLowerCase()
      const same = byName.get(key)
      if (same === undefined) byName.set(key, [model])
      else same.push(model)
    }
    this.built = { states, all, byName }
    return this.built
  }
}
