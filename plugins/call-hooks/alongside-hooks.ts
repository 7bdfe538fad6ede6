import type { CallHooks } from '../../core/platform/call-hook-registry.js'
import type { CallHook, CallRequest, HookLog } from '../../core/platform/call-hooks.js'

/**
 * One call's `alongside` hooks (hooked-call.ts): started once the `before` hooks left the request, they run while the
 * model answers. The first that refuses or fails (throws, rejects, or hangs past limits.hook_timeout) cancels the
 * call: `cancelled` aborts with its error as the reason, which the lease's signal carries to the model's server (its
 * request aborted) and to the surface (the error answered in its shape, or as a stream's error event).
 */
export class AlongsideHooks {
  private readonly cancel = new AbortController()
  /** The hooks' own signal: aborts when the call ends or is cancelled. */
  private readonly stop = new AbortController()
  private settled: Promise<unknown> | null = null
  private done = false
  private ended = false

  constructor (private readonly hooks: CallHooks, private readonly list: readonly CallHook[], private readonly log: HookLog) {}

  /** Aborts when a hook refused or failed: its error is the reason. */
  get cancelled (): AbortSignal { return this.cancel.signal }

  /** Starts the hooks on `request`, the first time only. */
  start (request: Readonly<CallRequest>): void {
    if (this.settled !== null) return
    // Once the call is over, what a hook still does concerns no request: its failure is not logged.
    const log: HookLog = { error: (obj, msg) => { if (!this.ended) this.log.error(obj, msg) } }
    this.settled = Promise.all(this.list.map(async (hook) => {
      try {
        await this.hooks.run(hook, 'alongside', log, () => hook.alongside!(request, this.stop.signal))
      } catch (err) {
        if (!this.ended && !this.cancel.signal.aborted) {
          this.cancel.abort(err)
          this.stop.abort(err)
        }
        throw err
      }
    }))
    this.settled.then(() => { this.done = true }, () => {})
  }

  /** Throws the error that cancelled the call, if one did. */
  check (): void {
    this.cancel.signal.throwIfAborted()
  }

  /** Once every hook resolved; throws the error of the first that refused or failed. */
  async wait (): Promise<void> {
    this.check()
    await this.settled
  }

  /** As `wait`, but null rather than a promise once every hook resolved: a stream's end then waits for nothing. */
  waiting (): Promise<void> | null {
    this.check()
    return this.done ? null : this.wait()
  }

  /** What a request that failed should fail with: the error that cancelled the call, if one did, else its own. */
  reason (err: unknown): unknown {
    return this.cancel.signal.aborted ? this.cancel.signal.reason : err
  }

  /** The call is over: the hooks' signal aborts, and from now on what they do is ignored. */
  end (): void {
    if (this.ended) return
    this.ended = true
    this.stop.abort()
  }
}
