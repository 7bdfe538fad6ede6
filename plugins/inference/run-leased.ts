import { ContextExceededError, RuntimeError } from '../../core/base/errors.js'
import type { Logger } from '../../core/base/logger.js'
import type { Priority } from '../../core/base/priority.js'
import type { RequestUsage } from '../../core/base/request-usage.js'
import type { AcquireRequest, AskPurpose, Lease, LeaseSource } from '../leases/lease.js'
import type { CallContext } from '../call-hooks/call-context.js'
import { CallReroute, HookedCall } from '../call-hooks/hooked-call.js'
import { upstreamFailure } from './upstream-failure.js'
import { waitText } from './wait-text.js'

/** A streamed answer, as far as failures go (core/server/event-stream.ts's EventStream is one). */
export interface FailableStream {
  readonly isOpen: boolean
  /** True once an event of the answer went out (progress comments are none); absent: `isOpen` stands for it. */
  readonly hasData?: boolean
  /** Ends an open stream with an error event; rethrows when it never opened (a real status is still possible). */
  fail(err: unknown): void
  /** Progress while the request waits for a load or a slot, in a form its clients skip (opens the stream). */
  comment?(text: string): void
}

/** What a surface received that decides which slot a request gets: handed over as received. */
export interface LeaseAsk {
  /** The model the request names. */
  model: string
  /** The request's `options` object. */
  options?: Record<string, unknown>
  /** The surface's top-level fields that are options (`max_tokens`, `temperature`), named as options. */
  overrides?: Record<string, unknown>
  /**
   * The request's `keep_alive` in ms, read by the surface with the rest of its body (core/base/units.ts parseKeepAlive:
   * a bad one is a 400 before anything is looked up, as Ollama reads it); absent: not sent.
   */
  keepAliveMs?: number
  /** @default 'generate' */
  purpose?: AskPurpose
  /** Where unknown option keys are reported (the request's log). */
  log?: Pick<Logger, 'warn'>
  /** The start of its conversation (AcquireRequest's `affinity`). */
  affinity?: () => string
  /** The session it names (AcquireRequest's `session`): wins over `affinity` to pick an upstream. */
  session?: string
  /** The request's usage record (`request.usage`), filled by its lease. */
  usage?: RequestUsage
  /** The priority class it asks for (AcquireRequest's `priority`). */
  priority?: Priority
  /** The plugins' call hooks it goes through (call-hooks/call-context.ts `callContext`); null or absent: none registered. */
  call?: CallContext | null
}

export interface LeasedRun<T> extends LeaseAsk {
  /** Aborted when the client goes away. */
  signal: AbortSignal
  /** The streamed answer, or null for a whole one. */
  stream: FailableStream | null
  /** What the request does with its slot: the surface's mapping between its shapes and llama-server's. */
  work(lease: Lease): Promise<T>
  /** Before the error event of a stream that fails once open: lets a surface close what it was writing. */
  beforeErrorEvent?(): void
  /**
   * A prompt longer than the most the model can hold: drop what the surface may drop (Ollama's `truncate`: the
   * oldest messages) and say true to run it again; false to answer the error.
   */
  shorten?(err: ContextExceededError): boolean
}

// A prompt refused as too long runs again at most this often: a larger context, then the surface's shortenings.
const MAX_REFITS = 8

/** A surface's ask as the scheduler takes it: whose it is (its session, its conversation). */
export function acquireRequest (ask: LeaseAsk, signal?: AbortSignal, onWait?: AcquireRequest['onWait']): AcquireRequest {
  return {
    ...affinityOf(ask), options: ask.options, overrides: ask.overrides, keepAliveMs: ask.keepAliveMs,
    purpose: ask.purpose, log: ask.log, usage: ask.usage, signal, ...(onWait ? { onWait } : {}),
    ...(ask.priority !== undefined ? { priority: ask.priority } : {}),
  }
}

/** How a request picks its upstream and slot: by the session it names, else by its conversation's start. */
function affinityOf (ask: LeaseAsk): Pick<AcquireRequest, 'affinity' | 'session'> {
  const { session, affinity } = ask
  // The same session, the same upstream (its cache is there), however its conversation starts (a compacted one).
  if (session !== undefined) return { session, affinity: () => `session\0${ask.usage?.cacheGroup ?? ''}\0${session}` }
  return affinity ? { affinity } : {}
}

/**
 * The skeleton every inference surface shares: take a slot (loading the model if needed), run, turn a broken
 * runtime connection into the real reason (the runtime died, the client left), give the slot back. A prompt
 * longer than the loaded context, refused before anything was sent, runs again on a larger one where the model
 * holds it (Lease.fitPrompt), and past that limit may be shortened by the surface (`shorten`, Ollama's truncate).
 * A whole answer's failure is thrown for the error handler; a stream's, once open, is its last event (undefined is
 * returned then); before it opened, it is thrown too, so that the client still gets a real status.
 */
export async function runLeased<T> (leases: LeaseSource, run: LeasedRun<T>): Promise<T | undefined> {
  // The model first (a bad or unknown name is the first thing to hear about), as the store names it: an alias's.
  let model = leases.modelName(run.model)
  // A stream that has waited two seconds says so, then every second (the scheduler's reportWait, wait-text.ts), before its first token.
  const stream = run.stream
  const request = { ...acquireRequest(run, run.signal, stream?.comment ? (wait) => stream.comment!(waitText(wait)) : undefined), streams: stream !== null }
  // Only where a plugin registered call hooks: the lease's endpoint then goes through them.
  const call = run.call != null ? new HookedCall(run.call, model, stream !== null) : null
  // A slot on the model, through the call hooks: the first, and each taken again (another model, here, a larger context).
  const take = async (): Promise<Lease> => {
    const taken = await leases.acquire(model, request)
    return call === null ? taken : call.lease(taken)
  }
  let lease: Lease
  try {
    lease = await take()
  } catch (err) {
    await call?.failed(err)
    // Progress opened the stream: the head is out, so the failure (a load that failed, a full queue) is its last event.
    if (stream === null || !stream.isOpen) throw err
    stream.fail(err)
    return undefined
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await run.work(lease)
      } catch (err) {
        if (call !== null && err instanceof CallReroute) {
          lease.release()
          model = leases.modelName(err.model)
          lease = await take()
          continue
        }
        const answering = (run.stream?.hasData ?? run.stream?.isOpen) === true
        // A stored model shared with upstreams, all of which failed before a byte of the answer: served here instead.
        if (!answering && !request.here && isUpstreamUnavailable(err) && leases.storedHere?.(model) === true) {
          lease.release()
          request.here = true
          lease = await take()
          continue
        }
        if (!(err instanceof ContextExceededError) || answering || attempt >= MAX_REFITS) throw err
        const fit = await lease.fitPrompt(err.promptTokens)
        if (fit.grown) {
          lease.release()
          lease = await take()
        } else if (!run.shorten?.(err)) {
          throw new ContextExceededError(err.promptTokens, fit.limit, fit.why)
        }
      }
    }
  } catch (err) {
    const reason = await upstreamFailure(lease, err)
    await call?.failed(reason)
    if (run.stream === null) throw reason
    if (run.stream.isOpen) run.beforeErrorEvent?.()
    run.stream.fail(reason)
    return undefined
  } finally {
    lease.release()
    call?.end()
  }
}

function isUpstreamUnavailable (err: unknown): boolean {
  return err instanceof RuntimeError && err.code === 'upstream_unavailable'
}
