import { HookFailedError, type CallHook, type CallPhase, type HookLog } from './call-hooks.js'

/**
 * The call hooks the plugins registered (`app.callHooks`), in registration order. The inference plugin runs them
 * (plugins/call-hooks/hooked-call.ts); with none registered a request takes the path it takes without hooks.
 */
export class CallHooks {
  private hooks: readonly CallHook[] = []

  /** @param timeoutMs limits.hook_timeout: the longest one hook may take for one request */
  constructor (readonly timeoutMs: number) {}

  /** Adds a plugin's hooks; they run after those added before them. */
  add (hook: CallHook): void {
    if (typeof hook?.name !== 'string' || hook.name === '') throw new TypeError('a call hook needs the name of its plugin')
    for (const phase of ['before', 'alongside', 'piece', 'end', 'after', 'failure'] as const) {
      if (hook[phase] !== undefined && typeof hook[phase] !== 'function') throw new TypeError(`call hook "${hook.name}": ${phase} must be a function`)
    }
    this.hooks = [...this.hooks, hook]
  }

  get empty (): boolean { return this.hooks.length === 0 }

  /** The hooks that have any of `phases`, in order. */
  of (...phases: CallPhase[]): readonly CallHook[] {
    return this.hooks.filter((h) => phases.some((phase) => h[phase] !== undefined))
  }

  /**
   * Runs one hook's phase for one request, bounded by limits.hook_timeout: what it returns, or a refusal it threw
   * (a 4xx) as it is, or a HookFailedError (logged, the plugin named). A hook that answers at once is not awaited.
   */
  run<T> (hook: CallHook, phase: CallPhase, log: HookLog, call: () => T | Promise<T>): T | Promise<T> {
    let result: T | Promise<T>
    try {
      result = call()
    } catch (err) {
      throw this.failure(hook, phase, log, err)
    }
    if (!isThenable(result)) return result
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within limits.hook_timeout (${this.timeoutMs} ms)`)), this.timeoutMs)
    })
    return Promise.race([result, bound]).then(
      (value) => { clearTimeout(timer); return value },
      (err: unknown) => { clearTimeout(timer); throw this.failure(hook, phase, log, err) },
    )
  }

  private failure (hook: CallHook, phase: CallPhase, log: HookLog, err: unknown): unknown {
    if (isRefusal(err)) return err
    log.error({ err, plugin: hook.name, hook: phase }, `the plugin "${hook.name}" failed in its ${phase} hook`)
    return new HookFailedError(hook.name, phase, err)
  }
}

function isThenable<T> (value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

/** A client error a hook threw on purpose (any copy of the error classes, or an error carrying a 4xx status). */
function isRefusal (err: unknown): boolean {
  const status = (err as { statusCode?: unknown } | null)?.statusCode
  return typeof status === 'number' && status >= 400 && status < 500
}
