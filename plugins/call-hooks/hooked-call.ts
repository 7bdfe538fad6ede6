import type { CallHook, CallOutcome, CallRequest } from '../../core/platform/call-hooks.js'
import type { ModelEndpoint, RelayProgress, RelaySink } from '../../runtimes/index.js'
import { linkedSignal } from '../../core/base/linked-signal.js'
import type { Lease } from '../leases/lease.js'
import { AlongsideHooks } from './alongside-hooks.js'
import { addReleased, cutEvents, endsAnswer, eventPieces, GENERATING_PATHS, readUsage, releasedEvents, saysFinished, sseEvent, streamEnd, wholePieces } from './answer-pieces.js'
import type { CallContext } from './call-context.js'
import { ADDED, CHANGED, CUT, PieceRelay, SENT, type Step } from './piece-relay.js'
import { PieceHooks } from './piece-hooks.js'
import type { QuickPiece } from './quick-piece.js'

type Json = Record<string, any>

/**
 * Where one streamed answer is: its last event sent (or how to parse it: a token read without parsing), Anthropic's
 * content block still open and the index of its next, the events sent, whether it ended, whether the `end` hooks were
 * told, and the events they added before the one last stepped.
 */
interface StreamState { last: Json | (() => Json) | null, open: number | null, next: number, sent: number, finished: boolean, told: boolean, added: Json[] }

function streamState (): StreamState {
  return { last: null, open: null, next: 0, sent: 0, finished: false, told: false, added: [] }
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
 * What comes back, streamed events or a whole answer, passes each `piece` hook (piece-hooks.ts), its end the `end`
 * hooks (what they release goes out before its finish); then `after`, or on error `failure`.
 */
export class HookedCall {
  private request: CallRequest | null = null
  /** The `before` hooks' changes, kept to apply again without them (a rerun on a larger context, another model). */
  private edits: ((body: Json) => Json) | null = null
  private readonly started = performance.now()
  private cut = false
  private readonly usage = { promptTokens: null as number | null, completionTokens: null as number | null }
  private readonly reads: boolean
  private readonly pieces: PieceHooks
  private readonly afterHooks: readonly CallHook[]
  private readonly alongside: AlongsideHooks | null

  /** `streamed`: whether the client gets the answer streamed (the model's server may stream it either way). */
  constructor (private readonly context: CallContext, private readonly model: string, private readonly streamed: boolean) {
    this.afterHooks = context.hooks.of('after')
    this.pieces = new PieceHooks(context, () => this.request!, this.started, this.afterHooks.length > 0)
    const alongside = context.hooks.of('alongside')
    this.alongside = alongside.length > 0 ? new AlongsideHooks(context.hooks, alongside, context.log) : null
    // Alongside hooks read the answer too: its end is held back until they settled.
    this.reads = this.pieces.any || this.afterHooks.length > 0 || this.alongside !== null
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
    const state = streamState()
    for await (const event of events) {
      let step = this.step(path, state, event)
      if (typeof step !== 'number') step = await step
      if (step === CUT) {
        // Closing the runtime's answer stops its generation.
        await events.return(undefined)
        await this.alongside?.wait()
        yield * await this.cutEnd(path, state)
        state.finished = true
        break
      }
      if (step === ADDED) yield * state.added.splice(0)
      yield event
    }
    if (state.finished) await this.after()
  }

  /**
   * A relayed stream through the hooks (piece-relay.ts): its bytes go on as they came where the hooks left an event
   * alone. A cut stops the relay (the model's server with it) and ends the answer in its path's shape.
   */
  private async relayed (path: string, relay: (sink: PieceRelay, signal: AbortSignal) => Promise<void>, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    const state = streamState()
    const stop = new AbortController()
    const linked = linkedSignal([signal, stop.signal])
    const hooks = {
      path,
      event: (event: Json) => this.step(path, state, event),
      piece: (piece: QuickPiece, event: () => Json) => this.stepPiece(state, piece, event),
      added: () => Buffer.from(state.added.splice(0).map((event) => sseEvent(path, event)).join('')),
    }
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
        pieces.end(Buffer.from((await this.cutEnd(path, state)).map((event) => sseEvent(path, event)).join('') + streamEnd(path)))
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

  /** The events that end an answer a hook cut (answer-pieces.ts), what the `end` hooks released before its finish. */
  private async cutEnd (path: string, state: StreamState): Promise<Json[]> {
    const events = cutEvents(path, lastOf(state), state.open, state.sent)
    const released = this.pieces.ends ? await this.pieces.end(false) : ''
    if (released === '') return events
    const at = events.findIndex((event) => saysFinished(path, event))
    return [...events.slice(0, at), ...releasedEvents(path, events[at]!, state.next, released), ...events.slice(at)]
  }

  /** One streamed event through the `piece` hooks: whether it goes as it came, changed, or the answer is cut before it. */
  private step (path: string, state: StreamState, event: Json): Step | Promise<Step> {
    if (event.error !== undefined) return SENT
    // The usage only `after` hooks read.
    if (this.afterHooks.length > 0) readUsage(event, this.usage)
    if (event.type === 'content_block_start') {
      state.open = event.index
      if (typeof event.index === 'number') state.next = Math.max(state.next, event.index + 1)
    } else if (event.type === 'content_block_stop') {
      state.open = null
    }
    this.pieces.edited = false
    const cutAt = this.pieces.offer(eventPieces(path, event), false)
    return typeof cutAt === 'number' ? this.passed(path, state, event, cutAt) : cutAt.then((at) => this.passed(path, state, event, at))
  }

  /** A token read without parsing (quick-piece.ts) through the `piece` hooks: it neither ends the answer nor says usage. */
  private stepPiece (state: StreamState, piece: QuickPiece, event: () => Json): Step | Promise<Step> {
    this.pieces.edited = false
    const cutAt = this.pieces.offer([piece], false)
    return typeof cutAt === 'number' ? this.passedPiece(state, event, cutAt) : cutAt.then((at) => this.passedPiece(state, event, at))
  }

  private passedPiece (state: StreamState, event: () => Json, cutAt: number): Step {
    if (cutAt !== -1) {
      this.cut = true
      return CUT
    }
    state.sent++
    state.last = event
    return this.pieces.edited ? CHANGED : SENT
  }

  private passed (path: string, state: StreamState, event: Json, cutAt: number): Step | Promise<Step> {
    if (cutAt !== -1) {
      this.cut = true
      return CUT
    }
    const step = this.pieces.edited ? CHANGED : SENT
    if (endsAnswer(path, event)) state.finished = true
    state.sent++
    state.last = event
    if (!saysFinished(path, event)) return step
    // The end waits for the alongside hooks: until then, one may still refuse the answer.
    const waiting = this.alongside?.waiting() ?? null
    if (state.told || !this.pieces.ends) return waiting === null ? step : waiting.then(() => step)
    state.told = true
    return (waiting ?? Promise.resolve()).then(() => this.pieces.end(false)).then((released) => {
      if (released === '') return step
      if (addReleased(path, event, false, released)) return CHANGED
      state.added = releasedEvents(path, event, state.next, released)
      return ADDED
    })
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
    const cutAt = await this.pieces.offer(slots, true)
    if (cutAt !== -1) {
      this.cut = true
      // The piece it cut at and those after it are left out.
      for (const slot of slots.slice(cutAt)) slot.replaceText('')
    }
    const released = this.pieces.ends ? await this.pieces.end(true) : ''
    if (released !== '') addReleased(path, answer, true, released)
    await this.after()
    return answer
  }

  private async after (): Promise<void> {
    if (this.afterHooks.length === 0) return
    const { hooks, log } = this.context
    const outcome: CallOutcome = {
      request: this.request!, text: this.pieces.text, reasoning: this.pieces.reasoning, usage: { ...this.usage },
      timings: { durationMs: performance.now() - this.started, firstPieceMs: this.pieces.firstPieceMs }, streamed: this.streamed, cut: this.cut,
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
