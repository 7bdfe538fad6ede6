import type { UpstreamConfig } from '../../plugins/upstreams/upstream-config.js'
import { listUpstreamModels } from './upstream-client.js'

/** What the last probe of an upstream found. */
/** What the last probe found; a new object (frozen) after each probe, so that readers may keep what they made of one. */
export interface UpstreamState {
  /** Its model list was read at the last probe. */
  readonly healthy: boolean
  /** Its models by its own names (filtered to `models`); empty while it fails. */
  readonly models: readonly string[]
  /** Why the last probe failed; null when it did not. */
  readonly error: string | null
  /** When the last probe ended (ms since the epoch); 0: none yet. */
  readonly checkedAt: number
}

export interface UpstreamProbeLog {
  warn(obj: object, msg: string): void
  info(obj: object, msg: string): void
}

export interface UpstreamProbeOptions {
  /** Between probes of a healthy upstream. @default 10000 */
  intervalMs?: number
  /** The longest wait between probes of a failing one (they wait 1 s, 2 s, 4 s ... up to this). @default 30000 */
  maxBackoffMs?: number
  /** How long one probe waits for the model list. @default 5000 */
  timeoutMs?: number
  /** Told when the upstream goes down (with why) and when it comes up. @default silent */
  log?: UpstreamProbeLog
}

const FIRST_BACKOFF_MS = 1000

/**
 * Keeps track of whether an upstream answers and which models it serves, by reading its model list: every
 * `intervalMs` while it answers, with a doubling back-off while it does not, and at once when asked (a request
 * to it just failed). Listeners hear when it goes up or down or its models change.
 */
export class UpstreamProbe {
  private current: UpstreamState = Object.freeze({ healthy: false, models: Object.freeze([]), error: null, checkedAt: 0 })
  private readonly intervalMs: number
  private readonly maxBackoffMs: number
  private readonly timeoutMs: number
  private readonly log: UpstreamProbeLog | undefined
  private readonly listeners: Array<() => void> = []
  private running = false
  private failures = 0
  private timer: NodeJS.Timeout | null = null
  private inFlight: Promise<void> | null = null
  /** Aborted by `stop()`, which then makes a new one: a probe that outlives its stop changes nothing. */
  private stopper = new AbortController()

  constructor (private readonly upstream: UpstreamConfig, options: UpstreamProbeOptions = {}) {
    this.intervalMs = options.intervalMs ?? 10_000
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000
    this.timeoutMs = options.timeoutMs ?? 5000
    this.log = options.log
  }

  get state (): UpstreamState {
    return this.current
  }

  /** Probes at once, then on schedule until `stop()`. */
  start (): void {
    if (this.running) return
    this.running = true
    void this.probeNow()
  }

  stop (): void {
    this.running = false
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.stopper.abort()
    this.stopper = new AbortController()
    this.inFlight = null
  }

  /** Probes now (or joins the probe under way); the schedule starts over from its result. Never rejects. */
  probeNow (): Promise<void> {
    if (this.inFlight !== null) return this.inFlight
    const run: Promise<void> = this.probe(this.stopper.signal).finally(() => {
      if (this.inFlight !== run) return // stopped meanwhile
      this.inFlight = null
      this.schedule()
    })
    this.inFlight = run
    return run
  }

  /** Called when the upstream goes up or down, or its model list changes. */
  onChange (listener: () => void): void {
    this.listeners.push(listener)
  }

  private async probe (stopped: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([stopped, AbortSignal.timeout(this.timeoutMs)])
    let models: string[] = []
    let error: string | null = null
    try {
      models = await listUpstreamModels(this.upstream, signal)
    } catch (err) {
      error = signal.aborted && !stopped.aborted
        ? `upstream "${this.upstream.name}" (${this.upstream.url}) did not answer within ${this.timeoutMs} ms`
        : (err as Error).message
    }
    if (stopped.aborted) return
    this.settle(models, error)
  }

  private settle (models: string[], error: string | null): void {
    const was = this.current
    const healthy = error === null
    this.current = Object.freeze({ healthy, models: Object.freeze([...models]), error, checkedAt: Date.now() })
    this.failures = healthy ? 0 : this.failures + 1
    const who = { upstream: this.upstream.name, url: this.upstream.url }
    // Once per outage, not once per retry; the first probe counts as a change.
    if (!healthy && (was.healthy || was.checkedAt === 0)) this.log?.warn({ ...who, error }, `upstream ${this.upstream.name} is down: ${error}`)
    if (healthy && !was.healthy) this.log?.info({ ...who, models: models.length }, `upstream ${this.upstream.name} is up, serving ${models.length} model(s)`)
    if (was.healthy === healthy && sameList(was.models, models)) return
    for (const listener of this.listeners) {
      try {
        listener()
      } catch (err) {
        this.log?.warn({ ...who, err }, 'an upstream change listener failed')
      }
    }
  }

  private schedule (): void {
    if (!this.running) return
    if (this.timer !== null) clearTimeout(this.timer)
    const delay = this.current.healthy
      ? this.intervalMs
      : Math.min(FIRST_BACKOFF_MS * 2 ** Math.min(this.failures - 1, 30), this.maxBackoffMs)
    // A probe must not keep the process alive on its own.
    this.timer = setTimeout(() => { this.timer = null; void this.probeNow() }, delay).unref()
  }
}

function sameList (a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i])
}
