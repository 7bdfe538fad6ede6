import type { CallRequest } from '../../core/platform/call-hooks.js'
import { linkedSignal } from '../../core/base/linked-signal.js'
import { AlongsideHooks } from './alongside-hooks.js'
import type { CallContext } from './call-context.js'

/** What a call without pieces starts as, for its hooks: the model, and what it is asked, in CallRequest's fields. */
export interface AnswerCallStart {
  model: string
  messages?: Array<Record<string, unknown>>
  prompt?: unknown
  options: Record<string, unknown>
}

/** What `after` hooks are told of its answer: the text that stands for it, and the tokens read. */
export interface AnswerOutcome { text: string, promptTokens: number | null, completionTokens: number | null }

/**
 * The call hooks of a request whose answer is no text (a decision: probabilities from one forward pass): `before`
 * hooks see and may change the request (its model, its messages or prompt, its options) or refuse it, `alongside`
 * hooks run while it is answered and may cancel it, `after` hooks are told the outcome, `failure` hooks a failure.
 * There are no pieces to offer `piece` hooks. `work` gets the request as the hooks left it and a signal that aborts
 * when `signal` does or an alongside hook cancels. Without a context (no hook registered, or a plugin's own call,
 * which its hooks must not judge again) it is `work` alone.
 */
export async function withAnswerCallHooks<T> (context: CallContext | null, start: AnswerCallStart, signal: AbortSignal, work: (request: CallRequest, signal: AbortSignal) => Promise<T>, outcome: (answer: T) => AnswerOutcome): Promise<T> {
  const request: CallRequest = { surface: context?.surface ?? '', route: context?.route ?? '', key: context?.key ?? null, grant: context?.grant ?? null, ...start }
  if (context === null) return work(request, signal)
  const { hooks, log } = context
  const started = performance.now()
  const alongsideList = hooks.of('alongside')
  const alongside = alongsideList.length > 0 ? new AlongsideHooks(hooks, alongsideList, log) : null
  let linked: ReturnType<typeof linkedSignal> | null = null
  try {
    for (const hook of hooks.of('before')) await hooks.run(hook, 'before', log, () => hook.before!(request))
    alongside?.start(request)
    linked = linkedSignal(alongside !== null ? [signal, alongside.cancelled] : [signal])
    let answer: T
    try {
      answer = await work(request, linked.signal)
    } catch (err) {
      throw alongside?.reason(err) ?? err
    }
    await alongside?.wait()
    const told = outcome(answer)
    const done = {
      request, text: told.text, reasoning: '', usage: { promptTokens: told.promptTokens, completionTokens: told.completionTokens },
      timings: { durationMs: performance.now() - started, firstPieceMs: null }, streamed: false, cut: false,
    }
    for (const hook of hooks.of('after')) await hooks.run(hook, 'after', log, () => hook.after!(done))
    return answer
  } catch (err) {
    for (const hook of hooks.of('failure')) {
      try { await hooks.run(hook, 'failure', log, () => hook.failure!(err, request)) } catch { /* logged by run(); never answered */ }
    }
    throw err
  } finally {
    linked?.unlink()
    alongside?.end()
  }
}
