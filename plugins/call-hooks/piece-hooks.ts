import type { CallHook, CallPiece, CallRequest, PieceVerdict } from '../../core/platform/call-hooks.js'
import type { PieceSlot } from './answer-pieces.js'
import type { CallContext } from './call-context.js'

/**
 * One answer's pieces through the plugins' `piece` hooks (hooked-call.ts), in order, and its end through their `end`
 * hooks; it keeps what the client got of the answer for `after` hooks, and when its first piece came.
 */
export class PieceHooks {
  /** A hook changed the text of a piece since this was last set false. */
  edited = false
  firstPieceMs: number | null = null
  text = ''
  reasoning = ''
  private readonly pieceHooks: readonly CallHook[]
  /** The `piece` and `end` hooks, in registration order: what one releases at the end passes the `piece` hooks after it. */
  private readonly endWalk: readonly CallHook[]

  /**
   * `request`: the request as the `before` hooks left it; `started`: when the call began; `gathers`: whether the
   * answer's text is kept (only `after` hooks read it).
   */
  constructor (private readonly context: CallContext, private readonly request: () => CallRequest, private readonly started: number, private readonly gathers: boolean) {
    this.pieceHooks = context.hooks.of('piece')
    this.endWalk = context.hooks.of('end').length > 0 ? context.hooks.of('piece', 'end') : []
  }

  /** Whether some hook reads the pieces or the end. */
  get any (): boolean { return this.pieceHooks.length > 0 || this.endWalk.length > 0 }

  /** Whether some hook is told the answer's end. */
  get ends (): boolean { return this.endWalk.length > 0 }

  /**
   * Each slot through every `piece` hook, in order: the index of the one a hook cut at (it is not sent), or -1. Hooks
   * that answer at once are not awaited: a promise comes back only from the first that returned one.
   */
  offer (slots: PieceSlot[], whole: boolean): number | Promise<number> {
    for (let index = 0; index < slots.length; index++) {
      const piece: CallPiece = { kind: slots[index]!.kind, text: slots[index]!.text, whole }
      for (let hook = 0; hook < this.pieceHooks.length; hook++) {
        const verdict = this.offerTo(this.pieceHooks[hook]!, piece)
        if (verdict instanceof Promise) return this.offerLater(slots, whole, index, hook, piece, verdict)
        if (verdict === 'cut') return index
      }
      this.took(slots[index]!, piece)
    }
    return -1
  }

  /**
   * The answer ended: each `end` hook in order, what it releases offered as a text piece to the `piece` hooks
   * registered after it. The text that goes out as the answer's last ('' for none; a hook that cut it drops it).
   */
  async end (whole: boolean): Promise<string> {
    const { hooks, log } = this.context
    let released = ''
    let cut = false
    for (const hook of this.endWalk) {
      if (hook.piece !== undefined && released !== '') {
        const piece: CallPiece = { kind: 'text', text: released, whole }
        if (await this.offerTo(hook, piece) === 'cut') {
          cut = true
          released = ''
        } else {
          released = piece.text
        }
      }
      if (hook.end === undefined) continue
      const more = await hooks.run(hook, 'end', log, () => hook.end!(this.request()))
      if (typeof more === 'string' && !cut) released += more
    }
    if (released !== '') {
      this.firstPieceMs ??= performance.now() - this.started
      if (this.gathers) this.text += released
    }
    return released
  }

  /** `offer` from the hook that returned a promise on: each verdict awaited. */
  private async offerLater (slots: PieceSlot[], whole: boolean, index: number, hook: number, piece: CallPiece, verdict: Promise<PieceVerdict>): Promise<number> {
    if (await verdict === 'cut') return index
    for (let next = hook + 1; next < this.pieceHooks.length; next++) if (await this.offerTo(this.pieceHooks[next]!, piece) === 'cut') return index
    this.took(slots[index]!, piece)
    for (let at = index + 1; at < slots.length; at++) {
      const later: CallPiece = { kind: slots[at]!.kind, text: slots[at]!.text, whole }
      for (const next of this.pieceHooks) if (await this.offerTo(next, later) === 'cut') return at
      this.took(slots[at]!, later)
    }
    return -1
  }

  private offerTo (hook: CallHook, piece: CallPiece): PieceVerdict | Promise<PieceVerdict> {
    return this.context.hooks.run(hook, 'piece', this.context.log, () => hook.piece!(piece, this.request()))
  }

  /** A piece the hooks let through, as they left it. */
  private took (slot: PieceSlot, piece: CallPiece): void {
    if (piece.text !== slot.text) {
      slot.replaceText(piece.text)
      this.edited = true
    }
    this.firstPieceMs ??= performance.now() - this.started
    // The whole text only `after` hooks read: not gathered on the streaming path for nobody.
    if (!this.gathers) return
    if (piece.kind === 'text') this.text += piece.text
    else if (piece.kind === 'reasoning') this.reasoning += piece.text
  }
}
