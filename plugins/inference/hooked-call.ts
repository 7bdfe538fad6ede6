import type { FastifyRequest } from 'fastify'
import type { CallHook, CallHooks, CallOutcome, CallPiece, CallRequest, HookLog, PieceVerdict } from '../../core/platform/call-hooks.js'
import type { Grant } from '../../core/base/grant.js'
import type { ModelEndpoint, RelayProgress, RelaySink } from '../../runtimes/index.js'
import { linkedSignal } from '../../core/base/linked-signal.js'
import type { Lease } from '../leases/lease.js'
import { AlongsideHooks } from './alongside-hooks.js'
import { cutEvents, endsAnswer, eventPieces, GENERATING_PATHS, readUsage, saysFinished, sseEvent, streamEnd, wholePieces, type PieceSlot } from './answer-pieces.js'
import { CHANGED, CUT, PieceRelay, SENT, type Step } from './piece-relay.js'
import type { QuickPiece } from './quick-piece.js'

type Json = Record<string, any>

/**
 * Where one streamed answer is: its last event sent (or how to parse it: a token read without parsing), Anthropic's
 * content block still open, the events sent, whether it ended.
 */
interface StreamState { last: Json | (() => Json) | null, open: number | null, sent: number, finished: boolean }

/** Who a call is, for its hooks: made by `callContext` only when some plugin registered call hooks. */
export interface CallContext {
  hooks: CallHooks
  surface: string
  route: string
  key: string | null
  grant: Grant | null
  log: HookLog
}

/** The request's call context, or null when no plugin registered call hooks (its path then costs nothing more). */
export function callContext (request: FastifyRequest): CallContext | null {
  const hooks = request.server.callHooks
  if (hooks.empty) return null
  const { surfaces } = request.server
  return { hooks, surface: surfaces.labelOf(request.url), route: request.url.split('?', 1)[0]!, key: request.grant?.name ?? null, grant: request.grant ?? null, log: request.log }
}

/** A `before` hook named another model: runLeased takes a lease on that one and runs the request again there. */
export class CallReroute extends Error {
  constructor (readonly model: string) { super(`routed to ${model}`) }
}

const NORMALIZED = ['messages', 'system', 'prompt', 'tools'] as const
const KEPT = new Set(['model', 'stream', 'stream_options', ...NORMALIZED])

/**
 * One inference request's call hooks, where every surface meets its model's server: the lease's endpoint, wrapped.
 * What it sends on a generating path is shown to `before` hooks as a CallRequest and rewritten as they leave it;
 * `alongside` hooks run meanwhile and may cancel the call (alongside-hooks.ts): the lease's signal then aborts with
 * their refusal, which stops the model's server and is what the call fails with; a finished answer waits for them.
 * What comes back, streamed events or a whole answer, passes each `piece` hook; then `after`, or on error `failure`.
 */
export class HookedCall {
  private request: CallRequest | null = null
  /** The `before` hooks' changes, kept to apply again without them (a rerun on a larger context, another model). */
  private edits: ((body: Json) => Json) | null = null
  private readonly started = performance.now()
  private firstPieceMs: number | null = null
  private text = ''
  private reasoning = ''
  private cut = false
  /** A `piece` hook changed the text of the event last offered. */
  private edited = false
  private readonly usage = { promptTokens: null as number | null, completionTokens: null as number | null }
  private readonly reads: boolean
  private readonly pieceHooks: readonly CallHook[]
  private readonly afterHooks: readonly CallHook[]
  private readonly alongside: AlongsideHooks | null

  /** `streamed`: whether the client gets the answer streamed (the model's server may stream it either way). */
  constructor (private readonly context: CallContext, private readonly model: string, private readonly streamed: boolean) {
    this.pieceHooks = context.hooks.of('piece')
    this.afterHooks = context.hooks.of('after')
    const alongside = context.hooks.of('alongside')
    this.alongside = alongside.length > 0 ? new AlongsideHooks(context.hooks, alongside, context.log) : null
    // Alongside hooks read the answer too: its end is held back until they settled.
    this.reads = this.pieceHooks.length > 0 || this.afterHooks.length > 0 || this.alongside !== null
  }

  /** `lease` with its endpoint going through the hooks. */
  lease (lease: Lease): Lease {
    const inner = lease.endpoint
    const endpoint: ModelEndpoint = {
      post: async (path, body, signal) => {
        if (!GENERATING_PATHS.has(path)) return inner.post(path, body, signal)
        const text = await inner.post(path, await this.before(body as Json), signal).catch(this.refused)
        return this.reads ? JSON.stringify(await this.whole(path, JSON.parse(text) as Json)) : text
      },
      postJson: async <T>(path: string, body: unknown, signal: AbortSignal) => {
        if (!GENERATING_PATHS.has(path)) return inner.postJson<T>(path, body, signal)
        const answer = await inner.postJson<T>(path, await this.before(body as Json), signal).catch(this.refused)
        return this.reads ? await this.whole(path, answer as Json) as T : answer
      },
      events: async (path, body, signal) => {
        if (!GENERATING_PATHS.has(path)) return inner.events(path, body, signal)
        const events = await inner.events(path, await this.before(body as Json), signal).catch(this.refused)
        return this.reads ? this.stream(path, events as AsyncGenerator<Json>) : events
      },
      relay: async (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal) => {
        if (!GENERATING_PATHS.has(path)) return inner.relay(path, payload, sink, progress, signal)
        const parsed = JSON.parse(payload) as Json
        const body = await this.before(parsed)
        // A request the `before` hooks left as it was goes as it was written, not written again.
        const sent = body === parsed ? payload : JSON.stringify(body)
        // Without a hook that reads the answer, its bytes go as they come.
        if (!this.reads) return inner.relay(path, sent, sink, progress, signal)
        return this.relayed(path, (relay, relaySignal) => inner.relay(path, sent, relay, relay.progress, relaySignal), sink, progress, signal)
      },
    }
    if (this.alongside === null) return { ...lease, endpoint }
    // The surfaces hand the lease's signal to its endpoint: a refusal alongside aborts the model's request with it.
    const linked = linkedSignal([lease.signal, this.alongside.cancelled])
    return { ...lease, endpoint, signal: linked.signal, release: () => { linked.unlink(); lease.release() } }
  }

  /** The call is over: its alongside hooks' signal aborts, and what they do from now on is ignored. */
  end (): void {
    this.alongside?.end()
  }

  /** Rethrows what a request to the model's server failed with, or the refusal that cancelled it. */
  private readonly refused = (err: unknown): never => {
    throw this.alongside === null ? err : this.alongside.reason(err)
  }

  /** Tells the `failure` hooks; what they throw is logged (by the hooks' runner), never answered. */
  async failed (error: unknown): Promise<void> {
    const request = this.request ?? { surface: this.context.surface, route: this.context.route, model: this.model, options: {}, key: this.context.key, grant: this.context.grant }
    for (const hook of this.context.hooks.of('failure')) {
      try {
        await this.context.hooks.run(hook, 'failure', this.context.log, () => hook.failure!(error, request))
      } catch {}
    }
  }

  /** The body the `before` hooks leave; the first time, they run (and may route the request elsewhere). */
  private async before (body: Json): Promise<Json> {
    if (this.edits !== null) {
      this.watch()
      return this.edits(body)
    }
    const { hooks, log } = this.context
    const request = this.normalized(body)
    this.request = request
    const seen = snapshot(request)
    for (const hook of hooks.of('before')) await hooks.run(hook, 'before', log, () => hook.before!(request))
    this.edits = editsOf(seen, request)
    if (request.model !== body.model) throw new CallReroute(request.model)
    this.watch()
    return this.edits(body)
  }

  /** Starts the alongside hooks once the request is as `before` left it (and where it stays); a refusal they threw at once stops it here. */
  private watch (): void {
    if (this.alongside === null) return
    this.alongside.start(this.request!)
    this.alongside.check()
  }

  private normalized (body: Json): CallRequest {
    const options: Json = {}
    for (const [field, value] of Object.entries(body)) if (!KEPT.has(field)) options[field] = value
    const request: CallRequest = { surface: this.context.surface, route: this.context.route, model: body.model ?? this.model, options, key: this.context.key, grant: this.context.grant }
    for (const field of NORMALIZED) if (body[field] !== undefined) request[field] = body[field]
    return request
  }

  private async * stream (path: string, runtime: AsyncGenerator<Json>): AsyncGenerator<Json> {
    const events = this.alongside === null ? runtime : this.cancellable(runtime)
    const state: StreamState = { last: null, open: null, sent: 0, finished: false }
    for await (const event of events) {
      let step = this.step(path, state, event)
      if (typeof step !== 'number') step = await step
      if (step === CUT) {
        // Closing the runtime's answer stops its generation.
        await events.return(undefined)
        await this.alongside?.wait()
        yield * cutEvents(path, lastOf(state), state.open, state.sent)
        state.finished = true
        break
      }
      yield event
    }
    if (state.finished) await this.after()
  }

  /**
   * A relayed stream through the hooks (piece-relay.ts): its bytes go on as they came where the hooks left an event
   * alone. A cut stops the relay (the model's server with it) and ends the answer in its path's shape.
   */
  private async relayed (path: string, relay: (sink: PieceRelay, signal: AbortSignal) => Promise<void>, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    const state: StreamState = { last: null, open: null, sent: 0, finished: false }
    const stop = new AbortController()
    const linked = linkedSignal([signal, stop.signal])
    const hooks = { path, event: (event: Json) => this.step(path, state, event), piece: (piece: QuickPiece, event: () => Json) => this.stepPiece(state, piece, event) }
    const pieces = new PieceRelay(hooks, sink, progress, (reason) => stop.abort(reason))
    try {
      try {
        await relay(pieces, linked.signal)
      } catch (err) {
        // What the hooks still held goes first, as the events before an error do.
        await pieces.settle()
        if (pieces.failure !== null) throw pieces.failure.error
        if (!pieces.cut) this.refused(err)
      }
      await pieces.settle()
      if (pieces.failure !== null) throw pieces.failure.error
      if (pieces.cut) {
        await this.alongside?.wait()
        state.finished = true
        pieces.end(Buffer.from(cutEvents(path, lastOf(state), state.open, state.sent).map((event) => sseEvent(path, event)).join('') + streamEnd(path)))
      } else {
        this.alongside?.check()
        pieces.end()
      }
    } finally {
      linked.unlink()
      pieces.close()
    }
    if (state.finished) await this.after()
  }

  /** One streamed event through the `piece` hooks: whether it goes as it came, changed, or the answer is cut before it. */
  private step (path: string, state: StreamState, event: Json): Step | Promise<Step> {
    if (event.error !== undefined) return SENT
    // The usage only `after` hooks read.
    if (this.afterHooks.length > 0) readUsage(event, this.usage)
    if (event.type === 'content_block_start') state.open = event.index
    else if (event.type === 'content_block_stop') state.open = null
    this.edited = false
    const cutAt = this.pieces(eventPieces(path, event), false)
    return typeof cutAt === 'number' ? this.passed(path, state, event, cutAt) : cutAt.then((at) => this.passed(path, state, event, at))
  }

  /** A token read without parsing (quick-piece.ts) through the `piece` hooks: it neither ends the answer nor says usage. */
  private stepPiece (state: StreamState, piece: QuickPiece, event: () => Json): Step | Promise<Step> {
    this.edited = false
    const cutAt = this.pieces([piece], false)
    return typeof cutAt === 'number' ? this.passedPiece(state, event, cutAt) : cutAt.then((at) => this.passedPiece(state, event, at))
  }

  private passedPiece (state: StreamState, event: () => Json, cutAt: number): Step {
    if (cutAt !== -1) {
      this.cut = true
      return CUT
    }
    state.sent++
    state.last = event
    return this.edited ? CHANGED : SENT
  }

  private passed (path: string, state: StreamState, event: Json, cutAt: number): Step | Promise<Step> {
    if (cutAt !== -1) {
      this.cut = true
      return CUT
    }
    const step = this.edited ? CHANGED : SENT
    if (endsAnswer(path, event)) state.finished = true
    state.sent++
    state.last = event
    // The end waits for the alongside hooks: until then, one may still refuse the answer.
    const waiting = this.alongside !== null && saysFinished(path, event) ? this.alongside.waiting() : null
    return waiting === null ? step : waiting.then(() => step)
  }

  /** The runtime's events, failing with the refusal that cancelled the call however its aborted request ended. */
  private async * cancellable (events: AsyncGenerator<Json>): AsyncGenerator<Json> {
    try {
      yield * events
    } catch (err) {
      this.refused(err)
    }
    this.alongside!.check()
  }

  private async whole (path: string, answer: Json): Promise<Json> {
    // Not returned before the alongside hooks settled: one may still refuse it.
    await this.alongside?.wait()
    readUsage(answer, this.usage)
    const slots = wholePieces(path, answer)
    const cutAt = await this.pieces(slots, true)
    if (cutAt !== -1) {
      this.cut = true
      // The piece it cut at and those after it are left out.
      for (const slot of slots.slice(cutAt)) slot.set('')
    }
    await this.after()
    return answer
  }

  /**
   * Each slot through every `piece` hook, in order: the index of the one a hook cut at (it is not sent), or -1. Hooks
   * that answer at once are not awaited: a promise comes back only from the first that returned one.
   */
  private pieces (slots: PieceSlot[], whole: boolean): number | Promise<number> {
    for (let index = 0; index < slots.length; index++) {
      const piece: CallPiece = { kind: slots[index]!.kind, text: slots[index]!.text, whole }
      for (let hook = 0; hook < this.pieceHooks.length; hook++) {
        const verdict = this.offer(hook, piece)
        if (verdict instanceof Promise) return this.piecesLater(slots, whole, index, hook, piece, verdict)
        if (verdict === 'cut') return index
      }
      this.took(slots[index]!, piece)
    }
    return -1
  }

  /** `pieces` from the hook that returned a promise on: each verdict awaited. */
  private async piecesLater (slots: PieceSlot[], whole: boolean, index: number, hook: number, piece: CallPiece, verdict: Promise<PieceVerdict>): Promise<number> {
    if (await verdict === 'cut') return index
    for (let next = hook + 1; next < this.pieceHooks.length; next++) if (await this.offer(next, piece) === 'cut') return index
    this.took(slots[index]!, piece)
    for (let at = index + 1; at < slots.length; at++) {
      const later: CallPiece = { kind: slots[at]!.kind, text: slots[at]!.text, whole }
      for (let next = 0; next < this.pieceHooks.length; next++) if (await this.offer(next, later) === 'cut') return at
      this.took(slots[at]!, later)
    }
    return -1
  }

  private offer (index: number, piece: CallPiece): PieceVerdict | Promise<PieceVerdict> {
    const hook = this.pieceHooks[index]!
    return this.context.hooks.run(hook, 'piece', this.context.log, () => hook.piece!(piece, this.request!))
  }

  /** A piece the hooks let through, as they left it. */
  private took (slot: PieceSlot, piece: CallPiece): void {
    if (piece.text !== slot.text) {
      slot.set(piece.text)
      this.edited = true
    }
    this.firstPieceMs ??= performance.now() - this.started
    // The whole text only `after` hooks read: not gathered on the streaming path for nobody.
    if (this.afterHooks.length === 0) return
    if (piece.kind === 'text') this.text += piece.text
    else if (piece.kind === 'reasoning') this.reasoning += piece.text
  }

  private async after (): Promise<void> {
    if (this.afterHooks.length === 0) return
    const { hooks, log } = this.context
    const outcome: CallOutcome = {
      request: this.request!, text: this.text, reasoning: this.reasoning, usage: { ...this.usage },
      timings: { durationMs: performance.now() - this.started, firstPieceMs: this.firstPieceMs }, streamed: this.streamed, cut: this.cut,
    }
    for (const hook of this.afterHooks) await hooks.run(hook, 'after', log, () => hook.after!(outcome))
  }
}

/** The last event a stream sent, parsed. */
function lastOf (state: StreamState): Json | null {
  return typeof state.last === 'function' ? state.last() : state.last
}

/** What the `before` hooks may change, as text: a hook may edit in place (a message's content) or replace. */
function snapshot (request: CallRequest): Record<string, string> {
  const seen: Record<string, string> = { model: request.model }
  for (const field of NORMALIZED) seen[field] = JSON.stringify(request[field])
  for (const [option, value] of Object.entries(request.options)) seen[`options.${option}`] = JSON.stringify(value)
  return seen
}

/** The changes from `seen` to `request`, as a function that makes them to a body. */
function editsOf (seen: Record<string, string>, request: CallRequest): (body: Json) => Json {
  const set: Json = {}
  const dropped: string[] = []
  for (const field of NORMALIZED) {
    if (JSON.stringify(request[field]) === seen[field]) continue
    if (request[field] === undefined) dropped.push(field)
    else set[field] = request[field]
  }
  for (const [option, value] of Object.entries(request.options)) {
    if (JSON.stringify(value) !== seen[`options.${option}`]) set[option] = value
  }
  for (const key of Object.keys(seen)) {
    if (key.startsWith('options.') && !(key.slice(8) in request.options)) dropped.push(key.slice(8))
  }
  if (dropped.length === 0 && Object.keys(set).length === 0) return (body) => body
  return (body) => {
    const edited = { ...body, ...set }
    for (const field of dropped) delete edited[field]
    return edited
  }
}
