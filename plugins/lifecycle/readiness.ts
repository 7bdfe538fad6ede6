import { access, constants } from 'node:fs/promises'
import type { Logger } from '../../core/base/logger.js'
import { UnavailableError } from '../../core/base/errors.js'
import type { InFlight } from './in-flight.js'
import type { Preloader } from './preloader.js'

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

/** A reason the server is not ready: in full (names, paths, log lines) and plain, for a caller without a key. */
export interface NotReady { full: string, plain: string }

export interface ReadinessOptions {
  inFlight: InFlight
  preloader: Preloader
  /** The models folder, which must be readable. */
  modelsDir: string
  /** Why no llama.cpp runtime can run here, or null when one is chosen. */
  runtimeProblem: () => string | null
  /** Stops every runtime: what a drain cut short still had running ends with an error. */
  unloadAll: () => Promise<void>
  /** Closes every connection still open after the cut's grace. */
  closeAllConnections: () => void
  log: Pick<Logger, 'info' | 'warn'>
}

// During a drain these still answer: reading what is there changes nothing.
const READ_ONLY_POSTS = new Set(['/api/show'])
// After the cut, what has not ended within this (an upload, a conversion) has its connection closed.
const CUT_GRACE_MS = 2000
const WITH_KEY = '(details with an API key)'

/** Whether the server is ready, and its graceful drain: what an orchestrator (Kubernetes, systemd) talks to. */
export class Readiness implements Lifecycle {
  private isDraining = false
  private readonly cutter = new AbortController()

  constructor (private readonly options: ReadinessOptions) {}

  get draining (): boolean { return this.isDraining }
  get inFlight (): number { return this.options.inFlight.size }
  get cutSignal (): AbortSignal { return this.cutter.signal }

  /** Whether a request is new work a drain refuses: anything but reads, once draining. */
  refuses (method: string, path: string): boolean {
    return this.isDraining && !['GET', 'HEAD', 'OPTIONS'].includes(method) && !READ_ONLY_POSTS.has(path)
  }

  async drain (timeoutMs: number, cut?: AbortSignal): Promise<'drained' | 'timeout' | 'cut'> {
    const { inFlight, preloader, log } = this.options
    // New requests are refused at the door (the lifecycle plugin's hook); those already through it are served, even
    // if they reach the scheduler only now (a large body still arriving). Only the preloads, nobody's request, stop here.
    this.isDraining = true
    preloader.stop()
    log.info({ inFlight: inFlight.size, timeoutMs }, 'draining: new work is refused; waiting for the requests in flight')
    let timer: NodeJS.Timeout | undefined
    const outcome = await Promise.race([
      inFlight.idle().then(() => 'drained' as const),
      new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) }),
      new Promise<'cut'>((resolve) => { if (cut?.aborted) resolve('cut'); else cut?.addEventListener('abort', () => resolve('cut'), { once: true }) }),
    ])
    clearTimeout(timer)
    if (outcome === 'drained') {
      log.info('drained: no request in flight')
      return outcome
    }
    log.warn({ inFlight: inFlight.size }, outcome === 'timeout' ? `drain timeout (${timeoutMs / 1000} s): cutting what is left` : 'drain cut short: cutting what is left')
    // Answers end with an error event as their models stop, pulls on the cut signal; closing the app would
    // otherwise wait for every response to end on its own.
    this.cutter.abort(new UnavailableError('the server is shutting down'))
    await this.options.unloadAll()
    let grace: NodeJS.Timeout | undefined
    await Promise.race([inFlight.idle(), new Promise((resolve) => { grace = setTimeout(resolve, CUT_GRACE_MS) })])
    clearTimeout(grace)
    if (inFlight.size > 0) this.options.closeAllConnections()
    return outcome
  }

  async notReady (): Promise<NotReady[]> {
    const { modelsDir, preloader } = this.options
    const reasons: NotReady[] = []
    if (this.isDraining) reasons.push({ full: 'draining: the server is shutting down', plain: 'draining: the server is shutting down' })
    const runtime = this.options.runtimeProblem()
    if (runtime !== null) reasons.push({ full: `no llama.cpp runtime chosen: ${runtime}`, plain: `no llama.cpp runtime chosen ${WITH_KEY}` })
    try {
      await access(modelsDir, constants.R_OK | constants.X_OK)
    } catch (err) {
      reasons.push({ full: `the models folder ${modelsDir} cannot be read: ${(err as Error).message}`, plain: `the models folder cannot be read ${WITH_KEY}` })
    }
    for (const full of preloader.pending()) reasons.push({ full, plain: `models named for preloading are not loaded yet ${WITH_KEY}` })
    return reasons
  }
}
