import { ClientGoneError } from '../../core/base/errors.js'
/** What a waiter hears while a shared run goes on. */
export type Listener<P> = (progress: P) => void

interface Run<T, P> {
  promise: Promise<T>
  controller: AbortController
  listeners: Set<Listener<P>>
  waiters: number
}

/**
 * One run per key, shared by everyone who asks for it while it goes on. Each waiter may leave (its signal):
 * it is answered at once with its signal's reason, and the run is cancelled only when the last waiter has
 * left, so one client going away never fails the others.
 */
export class SharedRuns<T, P> {
  private readonly runs = new Map<string, Run<T, P>>()

  /** Joins the run of `key`, or starts it with `start(signal, emit)`. */
  join (key: string, start: (signal: AbortSignal, emit: Listener<P>) => Promise<T>, opts: { signal?: AbortSignal, onProgress?: Listener<P> } = {}): Promise<T> {
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason)
    let run = this.runs.get(key)
    if (!run) {
      const controller = new AbortController()
      const listeners = new Set<Listener<P>>()
      const emit: Listener<P> = (p) => { for (const l of listeners) l(p) }
      const promise = Promise.resolve().then(() => start(controller.signal, emit)).finally(() => this.runs.delete(key))
      promise.catch(() => {}) // a run every waiter left still settles: nobody is there to hear it
      run = { promise, controller, listeners, waiters: 0 }
      this.runs.set(key, run)
    }
    const joined = run
    joined.waiters++
    const listener = opts.onProgress
    if (listener) joined.listeners.add(listener)
    return new Promise<T>((resolve, reject) => {
      let left = false
      const leave = (): void => {
        left = true
        if (listener) joined.listeners.delete(listener)
        if (--joined.waiters === 0) joined.controller.abort(new ClientGoneError())
        reject(opts.signal!.reason)
      }
      opts.signal?.addEventListener('abort', leave, { once: true })
      joined.promise.then(resolve, reject).finally(() => {
        opts.signal?.removeEventListener('abort', leave)
        if (!left) {
          joined.waiters--
          if (listener) joined.listeners.delete(listener)
        }
      })
    })
  }

  /** Runs now going on. */
  get size (): number { return this.runs.size }

  /** Cancels every run whose key passes `which` (all by default) and waits until each has settled and cleaned up. */
  async abort (reason: Error, which: (key: string) => boolean = () => true): Promise<void> {
    const runs = [...this.runs].filter(([key]) => which(key)).map(([, run]) => run)
    for (const run of runs) run.controller.abort(reason)
    await Promise.allSettled(runs.map((r) => r.promise))
  }
}
