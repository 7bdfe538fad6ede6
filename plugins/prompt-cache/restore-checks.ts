import type { Logger } from '../../core/base/logger.js'
import type { RuntimeEndpoint, SlotCache } from '../../runtimes/index.js'

/** A runtime that does not list its slots this soon is asked again at the next occasion (or judged at its end). */
const LIST_LIMIT_MS = 2_000
/**
 * A restored slot busy with a task whose prompt has not begun yet (or that shared nothing with it) is looked at again
 * this much later, a few times after each occasion, so that it is judged while its runtime serves.
 */
const BUSY_RETRY_MS = 200
const BUSY_RETRIES = 25

/** A save restored into a slot: `save` names it (its file stem), `tokens` it held. */
export interface RestoredSave { slot: number, save: string, tokens: number }

/**
 * What a restore came to, said once: `reused` (its slot's first task reused `reused` of the restored tokens),
 * `missed` (a task came but reused too little of it: `broken` when it shared the conversation and still evaluated it
 * again, so the save itself is no good; otherwise another conversation took the slot), or `unused` (its runtime
 * ended before a task took the slot).
 */
export type RestoreVerdict =
  | { outcome: 'reused', reused: number }
  | { outcome: 'missed', reason: string, broken: boolean }
  | { outcome: 'unused', reason: string }

export interface RestoreCheckOptions {
  model: string
  endpoint: Pick<RuntimeEndpoint, 'slotCaches'>
  /** The saves restored into the runtime's slots before it took its first request. */
  restored: RestoredSave[]
  /** Below this many tokens shared with a prompt, a slot's first task did not reuse its save: another conversation's. */
  minTokens: number
  /** Whether the runtime's saves carry context checkpoints (the patch set): the reason a miss gives without them. */
  checkpoints: boolean
  log?: Pick<Logger, 'info' | 'warn'>
  /** Each restore's verdict, once; a broken miss's save is the caller's to drop. */
  onVerdict: (restored: RestoredSave, verdict: RestoreVerdict) => void | Promise<void>
}

/**
 * Judges each restored save exactly once, from what llama-server says of the first task its slot takes (`prompt_reuse`
 * in GET /slots, the patch set's: the tokens the slot's cache shared with the prompt, and those it reused). Looked at
 * on each occasion the caller has (a request's first token, a request's end), and a last time as the runtime is about
 * to stop (`stop`): what no task took by then was not used.
 */
export class RestoreChecks {
  private readonly pending: Map<number, RestoredSave>
  private running: Promise<void> | null = null
  /** A look asked for while one was under way: it runs once that one is done, to read what came since. */
  private next: Promise<void> | null = null
  private retries = 0
  private retry: NodeJS.Timeout | null = null
  private ending: Promise<void> | null = null

  constructor (private readonly options: RestoreCheckOptions) {
    this.pending = new Map(options.restored.map((r) => [r.slot, r]))
  }

  get model (): string { return this.options.model }

  /** No restored slot is left to judge. */
  get done (): boolean { return this.pending.size === 0 }

  /** Reads the slots and judges each restored one whose first task's counts are known. Never throws. */
  check (): Promise<void> {
    if (this.done || this.ending !== null) return Promise.resolve()
    this.retries = 0
    if (this.running === null) return this.look()
    this.next ??= this.running.then(() => { this.next = null; return this.look() })
    return this.next
  }

  /**
   * Its runtime is about to stop (whatever stops it): one last look while it can still answer, then every restore no
   * task took is judged unused. Idempotent; never throws.
   */
  stop (): Promise<void> {
    this.ending ??= this.finish()
    return this.ending
  }

  private look (): Promise<void> {
    if (this.done || this.ending !== null) return Promise.resolve()
    this.running ??= this.judge(false).then(() => {}).finally(() => { this.running = null })
    return this.running
  }

  private async finish (): Promise<void> {
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
    await this.running
    const beginning = this.done ? new Set<number>() : await this.judge(true)
    for (const restored of [...this.pending.values()]) {
      const reason = beginning.has(restored.slot) ? 'its runtime stopped as a request on its slot began' : 'its runtime stopped before a request took its slot'
      await this.settle(restored, { outcome: 'unused', reason }, undefined)
    }
  }

  /**
   * Judges what the slots say now. `last`: the runtime is stopping, so no look again later.
   * @returns the restored slots whose task had not begun its prompt
   */
  private async judge (last: boolean): Promise<Set<number>> {
    const undecided = new Set<number>()
    let slots: SlotCache[]
    try {
      slots = await this.options.endpoint.slotCaches(AbortSignal.timeout(LIST_LIMIT_MS))
    } catch {
      return undecided
    }
    for (const slot of slots) {
      const restored = this.pending.get(slot.id)
      if (restored === undefined || slot.task === undefined) continue
      const verdict = judgeSlot(slot, restored, this.options)
      if (verdict === 'undecided') { undecided.add(slot.id); continue }
      if (verdict === null) {
        // A build without the patch set does not say what the slot reused: nothing to count (docs/operations.md).
        this.pending.delete(slot.id)
        this.options.log?.info({ model: this.options.model, save: restored.save, slot: slot.id, tokens: restored.tokens }, 'a restored prompt cache cannot be judged: the runtime does not say what its slot reused')
        continue
      }
      await this.settle(restored, verdict, slot)
    }
    if (undecided.size > 0 && !last && this.ending === null && this.retry === null && this.retries < BUSY_RETRIES) {
      this.retries++
      this.retry = setTimeout(() => { this.retry = null; void this.look() }, BUSY_RETRY_MS)
      this.retry.unref()
    }
    return undecided
  }

  private async settle (restored: RestoredSave, verdict: RestoreVerdict, slot: SlotCache | undefined): Promise<void> {
    if (!this.pending.delete(restored.slot)) return
    const fields = { model: this.options.model, save: restored.save, slot: restored.slot, tokens: restored.tokens, outcome: verdict.outcome, shared: slot?.common, reused: slot?.reused }
    if (verdict.outcome === 'missed' && verdict.broken) {
      this.options.log?.warn({ ...fields, reason: verdict.reason }, 'a restored prompt cache was not reused; deleted')
    } else {
      this.options.log?.info({ ...fields, ...(verdict.outcome !== 'reused' ? { reason: verdict.reason } : {}) }, `a restored prompt cache was ${verdict.outcome}`)
    }
    // A failed deletion leaves a save that misses again next time: nothing for the request that ran.
    await Promise.resolve(this.options.onVerdict(restored, verdict)).catch(() => {})
  }
}

/**
 * What a restored slot's first task says of its save (`slot.task` defined): `undecided` while the task has not begun
 * its prompt (busy, nothing shared yet: a task that shares nothing is told once it ends); null when the build does not
 * say what the cache shared.
 */
export function judgeSlot (slot: SlotCache, restored: RestoredSave, options: Pick<RestoreCheckOptions, 'minTokens' | 'checkpoints'>): RestoreVerdict | 'undecided' | null {
  if (slot.common === undefined || slot.reused === undefined) return null
  if (slot.busy && slot.common === 0) return 'undecided'
  const counts = `the slot shared ${slot.common} tokens of the ${restored.tokens} restored with the prompt and reused ${slot.reused}`
  if (slot.common < options.minTokens) return { outcome: 'missed', broken: false, reason: `${counts}: another conversation took the slot` }
  if (slot.reused * 2 >= slot.common) return { outcome: 'reused', reused: slot.reused }
  return {
    outcome: 'missed',
    broken: true,
    reason: options.checkpoints
      ? `${counts}: the runtime evaluated the prompt again`
      : `${counts}: its saves carry no context checkpoints (a llama-server without llamagate's patch set), so a hybrid or sliding-window model's restored cache cannot be rolled back to where the prompt differs`,
  }
}
