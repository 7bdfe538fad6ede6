import type { Logger } from '../../core/logger.js'
import type { RuntimeEndpoint, SlotCache } from '../../runtimes/index.js'

/** A runtime that does not list its slots this soon is asked again after the next request. */
const LIST_LIMIT_MS = 2_000
/**
 * llama-server answers a request before it marks the slot idle: a slot still busy when its request ended is looked
 * at again this much later, a few times, so that a last request is judged too.
 */
const BUSY_RETRY_MS = 200
const BUSY_RETRIES = 25

/** A save restored into a slot: `save` names it (its file stem), `tokens` it held. */
export interface RestoredSave { slot: number, save: string, tokens: number }

export interface RestoreCheckOptions {
  model: string
  endpoint: Pick<RuntimeEndpoint, 'slotCaches'>
  /** The saves restored into the runtime's slots before it took its first request. */
  restored: RestoredSave[]
  /** Below this many tokens shared with a prompt, a slot's first task says nothing about its save. */
  minTokens: number
  /** Whether the runtime's saves carry context checkpoints (the patch set): the reason a miss gives without them. */
  checkpoints: boolean
  log?: Pick<Logger, 'warn'>
  /** A save that served: its first task reused what it shared with the prompt. */
  onReused?: (model: string, tokens: number) => void
  /** A save that did not serve, with the reason; the caller drops it. */
  onMiss: (model: string, save: string, reason: string) => void | Promise<void>
}

/**
 * Whether each restored save did what it promised: the first task a restored slot takes reuses what the save shared
 * with that task's prompt. llama-server tells both counts of a slot's last task (`prompt_reuse` in GET /slots, the
 * patch set's); a slot that reused less than half of what it shared evaluated the conversation again, which a
 * recurrent or sliding-window memory without its checkpoints does silently. Checked after requests, until every
 * restored slot has taken a task.
 */
export class RestoreChecks {
  private readonly pending: Map<number, RestoredSave>
  private running: Promise<void> | null = null
  private retries = 0
  private retry: NodeJS.Timeout | null = null

  constructor (private readonly options: RestoreCheckOptions) {
    this.pending = new Map(options.restored.map((r) => [r.slot, r]))
  }

  /** No restored slot is left to judge. */
  get done (): boolean { return this.pending.size === 0 }

  /** Reads the slots once (one read at a time) and judges each restored one that has taken a task. Never throws. */
  check (): Promise<void> {
    if (this.done) return Promise.resolve()
    this.running ??= this.judge().finally(() => { this.running = null })
    return this.running
  }

  private async judge (): Promise<void> {
    let slots: SlotCache[]
    try {
      slots = await this.options.endpoint.slotCaches(AbortSignal.timeout(LIST_LIMIT_MS))
    } catch {
      return
    }
    let busy = false
    for (const slot of slots) {
      const restored = this.pending.get(slot.id)
      if (restored === undefined || slot.task === undefined) continue
      if (slot.busy) { busy = true; continue }
      this.pending.delete(slot.id)
      const verdict = judgeSlot(slot, restored, this.options)
      if (verdict === null) continue
      if (verdict.reused) {
        this.options.onReused?.(this.options.model, slot.reused ?? 0)
      } else {
        this.options.log?.warn({ model: this.options.model, save: restored.save, slot: slot.id, shared: slot.common, reused: slot.reused, reason: verdict.reason }, 'a restored prompt cache was not reused; deleted')
        // Its deletion failing leaves a save that misses again next time: nothing for the request that ended.
        await Promise.resolve(this.options.onMiss(this.options.model, restored.save, verdict.reason)).catch(() => {})
      }
    }
    if (busy && this.retry === null && this.retries < BUSY_RETRIES) {
      this.retries++
      this.retry = setTimeout(() => { this.retry = null; void this.check() }, BUSY_RETRY_MS)
      this.retry.unref()
    }
  }

  /** Stops looking (its runtime stops). */
  stop (): void {
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
    this.pending.clear()
  }
}

/**
 * What a restored slot's first task says of its save: null when nothing (the build does not tell what the cache
 * shared, or the task shared too little of it: another conversation took the slot).
 */
export function judgeSlot (slot: SlotCache, restored: RestoredSave, options: Pick<RestoreCheckOptions, 'minTokens' | 'checkpoints'>): { reused: true } | { reused: false, reason: string } | null {
  if (slot.common === undefined || slot.reused === undefined) return null
  if (slot.common < options.minTokens) return null
  if (slot.reused * 2 >= slot.common) return { reused: true }
  const counts = `the slot shared ${slot.common} tokens of the ${restored.tokens} restored with the prompt and reused ${slot.reused}`
  return {
    reused: false,
    reason: options.checkpoints
      ? `${counts}: the runtime evaluated the prompt again`
      : `${counts}: its saves carry no context checkpoints (a llama-server without llamagate's patch set), so a hybrid or sliding-window model's restored cache cannot be rolled back to where the prompt differs`,
  }
}
