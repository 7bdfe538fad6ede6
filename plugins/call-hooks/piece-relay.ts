import type { Socket } from 'node:net'
import { endsEvent, EVENT_END, eventBytes, eventData, eventsIn, httpChunk, PartialEvent, type RelayProgress, type RelaySink } from '../../runtimes/index.js'
import { quickPiece, type QuickPiece } from './quick-piece.js'

type Json = Record<string, any>

/**
 * What the call's hooks made of one event: it goes as it came, changed (written again), the answer is cut before it,
 * or events the hooks added go before it (it is written again after them: the text released at an answer's end).
 */
export const SENT = 0
export const CHANGED = 1
export const CUT = 2
export const ADDED = 3
export type Step = typeof SENT | typeof CHANGED | typeof CUT | typeof ADDED

const EMPTY = Buffer.alloc(0)

/** What the relay asks of the call's hooks (hooked-call.ts). */
export interface RelayHooks {
  /** The path of the model's server the stream answers: llama-server's usual token event of some is read without parsing it (quick-piece.ts). */
  readonly path: string
  /** One parsed event through the hooks. */
  event(event: Json): Step | Promise<Step>
  /** One token event's text through the hooks; `event` parses the whole of it, where it is needed (a cut's end). */
  piece(piece: QuickPiece, event: () => Json): Step | Promise<Step>
  /** The bytes of the events the hooks added before the event last stepped (its step was ADDED). */
  added(): Buffer
}

/** An event as the walk read it: its text alone, or parsed (its SSE name and JSON), or neither (`[DONE]`, a comment). */
type Read = QuickPiece | { name: string | null, data: Json } | null

/** One read of the relay, its whole events walked through the hooks; `out` is made only once one of them changed. */
interface Walk { text: Buffer, whole: number, at: number, out: Buffer[] | null, events: number }

/**
 * The sink a relayed stream (stream-relay.ts's contract) is written to where call hooks read its pieces
 * (hooked-call.ts): each whole event is parsed only to hand its pieces to the hooks; one they left alone goes on as
 * the bytes that came, and only one they changed is written again. Hooks that answer at once cost no promise; one
 * that returns a promise holds the relay back (its writes say "backed up" until the hooks are done). A cut, or a
 * hook that failed, stops the relay (`stop`): the events after it are not sent. The surface's rewrite applies after
 * the hooks, as on the byte relay; the surface's `progress` gets the bytes as written here (its tail, its head).
 */
export class PieceRelay implements RelaySink {
  /** What the relay is handed: its own tail of what came is not the surface's (that is kept here, of what went). */
  readonly progress: RelayProgress
  /** The hooks cut the answer: nothing more is sent. */
  cut = false
  /** What a hook failed with, if one did: the stream fails with it. */
  failure: { error: unknown } | null = null
  private readonly held = new PartialEvent()
  /** While a hook's promise holds the relay back: what came meanwhile waits in `queue`. */
  private pending: Promise<void> | null = null
  private queue: Buffer[] = []
  private client: Socket | null = null
  private asked = false
  private started = false
  // The last bytes written, enough of them for the surface's `tail`: made into it once, at the end.
  private recent: Buffer[]
  private recentBytes: number

  constructor (
    private readonly hooks: RelayHooks,
    private readonly sink: RelaySink,
    private readonly surface: RelayProgress,
    private readonly stop: (reason: unknown) => void,
  ) {
    this.progress = { tailBytes: surface.tailBytes, tail: EMPTY }
    this.recent = [surface.tail]
    this.recentBytes = surface.tail.length
  }

  open (): void { this.sink.open() }

  /** Never the client's socket: the relay hands over its data, unframed, to be read here. */
  chunkedSocket (): Socket | null { return null }

  closing (): void { this.sink.closing?.() }

  writeRaw (data: Buffer): boolean {
    if (this.pending !== null) {
      this.queue.push(data)
      return false
    }
    const done = this.guarded(() => this.take(data))
    if (typeof done === 'boolean') return done
    this.pending = this.drain(done)
    return false
  }

  drained (): Promise<void> {
    return this.pending ?? this.sink.drained(this.client ?? undefined)
  }

  /** Once what the hooks still hold is written (or dropped, after a cut or a failure). */
  async settle (): Promise<void> {
    while (this.pending !== null) await this.pending
  }

  /** What it holds of an event not yet ended (the relay bounds it as a line). */
  get heldBytes (): number { return this.held.bytes }

  /** The stream ended: half an event it ended in, `bytes` (the events that end a cut answer), what the surface's rewrite kept back. */
  end (bytes: Buffer = EMPTY): void {
    if (this.failure !== null) return
    const rest = this.held.take()
    if (rest.length > 0 && !this.cut) this.emit(rest, 0)
    if (bytes.length > 0) this.emit(bytes, eventsIn(bytes))
    const kept = this.surface.rewrite?.end()
    if (kept !== undefined && kept.length > 0) this.write(kept)
  }

  /** The surface's `tail`: the last bytes written, also when the stream failed. */
  close (): void {
    this.surface.tail = Buffer.concat(this.recent).subarray(-this.surface.tailBytes)
    this.recent = []
  }

  /** Waits for `first` (a hook's promise), then takes what came meanwhile, in order; never rejects (a failure stops the relay). */
  private async drain (first: Promise<void>): Promise<void> {
    await first.catch(this.fail)
    while (this.queue.length > 0) {
      const data = this.queue.shift()!
      const done = this.guarded(() => this.take(data))
      if (done === false) await this.sink.drained(this.client ?? undefined)
      else if (done !== true) await done.catch(this.fail)
    }
    this.pending = null
  }

  private guarded (work: () => boolean | Promise<void>): boolean | Promise<void> {
    try {
      return work()
    } catch (err) {
      this.fail(err)
      return true
    }
  }

  private readonly fail = (error: unknown): void => {
    if (this.failure !== null) return
    this.failure = { error }
    this.stop(error)
  }

  /** One read of the relay: its whole events through the hooks (what ends in half an event waits for the rest). */
  private take (data: Buffer): boolean | Promise<void> {
    if (this.cut || this.failure !== null) return true
    const text = this.held.join(data)
    if (text === null) return true
    const whole = endsEvent(text) ? text.length : text.lastIndexOf(EVENT_END) + 2
    if (whole < 2) {
      this.held.hold(text)
      return true
    }
    if (whole < text.length) this.held.hold(text.subarray(whole))
    return this.walk({ text, whole, at: 0, out: null, events: 0 })
  }

  private walk (walk: Walk): boolean | Promise<void> {
    const { hooks } = this
    while (walk.at < walk.whole) {
      const { text, at } = walk
      const end = text.indexOf(EVENT_END, at) + 2
      const quick = quickPiece(hooks.path, text, at, end)
      const read: Read = quick ?? eventData(text, at, end)
      const step = read === null ? SENT : quick !== null ? hooks.piece(quick, () => JSON.parse(text.toString('utf8', quick.json, end - 2)) as Json) : hooks.event((read as { data: Json }).data)
      if (typeof step !== 'number') return this.resumed(walk, end, step, read)
      if (this.stepped(walk, end, step, read)) break
    }
    return this.send(walk)
  }

  /** The walk once a hook's promise for the event before `end` settled. */
  private async resumed (walk: Walk, end: number, step: Promise<Step>, read: Read): Promise<void> {
    const written = this.stepped(walk, end, await step, read) ? this.send(walk) : this.walk(walk)
    if (written === false) await this.sink.drained(this.client ?? undefined)
    else if (written !== true) await written
  }

  /** Moves past one event as the hooks left it; true when they cut the answer there. */
  private stepped (walk: Walk, end: number, step: Step, read: Read): boolean {
    if (step === SENT) {
      walk.out?.push(walk.text.subarray(walk.at, end))
    } else {
      walk.out ??= [walk.text.subarray(0, walk.at)]
      if (step === CUT) {
        this.cut = true
        return true
      }
      if (step === ADDED) {
        const added = this.hooks.added()
        walk.out.push(added)
        walk.events += eventsIn(added)
      }
      walk.out.push(again(walk.text, walk.at, end, read!))
    }
    walk.events++
    walk.at = end
    return false
  }

  private send (walk: Walk): boolean {
    const bytes = walk.out !== null ? Buffer.concat(walk.out) : walk.whole === walk.text.length ? walk.text : walk.text.subarray(0, walk.whole)
    const written = this.emit(bytes, walk.events)
    if (this.cut) this.stop(new Error('the answer was cut by a piece hook'))
    return written
  }

  /** Bytes of whole events to the client, as the relay writes them: counted, kept for `tail` and `head`, the surface's rewrite applied. */
  private emit (bytes: Buffer, events: number): boolean {
    if (bytes.length === 0) return true
    const { surface } = this
    this.recent.push(bytes)
    this.recentBytes += bytes.length
    if (this.recentBytes - this.recent[0]!.length >= surface.tailBytes) this.recentBytes -= this.recent.shift()!.length
    const headBytes = surface.headBytes ?? 0
    if (headBytes > 0 && (surface.head?.length ?? 0) < headBytes) surface.head = Buffer.concat([surface.head ?? EMPTY, bytes]).subarray(0, headBytes)
    if (!this.started) {
      this.started = true
      surface.firstData?.()
    }
    if (events > 0) surface.onEvents?.(events)
    return this.write(surface.rewrite === undefined ? bytes : surface.rewrite.push(bytes) ?? bytes)
  }

  /** To the client's socket as one chunk when its response is chunked (as the relay writes what it rewrote), else to the sink. */
  private write (bytes: Buffer): boolean {
    if (bytes.length === 0) return true
    if (!this.asked) {
      this.asked = true
      this.client = this.sink.chunkedSocket()
    }
    return this.client !== null ? this.client.write(httpChunk(bytes)) : this.sink.writeRaw(bytes)
  }
}

/** A changed event written again: only its text where it was read alone, else its JSON under its SSE name. */
function again (text: Buffer, start: number, end: number, read: NonNullable<Read>): Buffer {
  if ('edited' in read) return read.edited(text, start, end)
  return eventBytes(read.data, read.name)
}
