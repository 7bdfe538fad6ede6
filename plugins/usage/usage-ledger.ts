import { rename } from 'node:fs/promises'
import type { Logger } from '../../core/base/logger.js'
import type { UsageBook, UsageTotals } from './usage-book.js'
import { isUsageCount, readUsageFile, UsageFileError, writeUsageFile, type ReadUsage, type UsageState } from './usage-file.js'

/** What one finished request used of a model, as its lease counted it (core/base/request-usage.ts). */
export interface UsedModel {
  promptTokens: number
  cachedTokens: number
  generatedTokens: number
  queueMs: number
  runtimeMs: number
}

/** One key's totals on one model. */
export interface UsageRow { key: string, model: string, totals: UsageTotals }

export interface UsageLedgerOptions {
  /** Where the usage is kept across restarts (`<data_dir>/usage.json`). */
  file: string
  log: Pick<Logger, 'info' | 'warn' | 'error'>
  /** The clock that says which UTC day it is. @default Date.now */
  now?: () => number
}

/** Days of per-day tokens kept: today's limit needs today; yesterday's stays for a look back across midnight. */
const KEPT_DAYS = 2
const DAY_MS = 24 * 3600_000

/**
 * Usage per API key and model (requests, tokens, time waiting and running) and each key's tokens per UTC day,
 * kept in memory and written to a file when asked (`flush`). Counted when a request ends, so a day's tokens are
 * those of the requests finished that day.
 */
export class UsageLedger implements UsageBook {
  private readonly totals = new Map<string, Map<string, UsageTotals>>()
  private readonly days = new Map<string, Map<string, number>>()
  private readonly now: () => number
  private dirty = false
  private writing: Promise<void> = Promise.resolve()

  constructor (private readonly options: UsageLedgerOptions) {
    this.now = options.now ?? Date.now
  }

  /**
   * Reads what the file kept. A file that cannot be read as usage is renamed `<file>.bad` and said in the log: the
   * server starts counting afresh rather than not starting.
   */
  async load (): Promise<void> {
    const { file, log } = this.options
    let read: ReadUsage | null
    try {
      read = await readUsageFile(file)
    } catch (err) {
      if (!(err instanceof UsageFileError)) throw err
      const aside = `${file}.bad`
      try {
        await rename(file, aside)
      } catch (renameErr) {
        // Still no reason not to start: the usage is counted in memory, and written once the file can be.
        log.error({ err: err.message, renameErr: (renameErr as Error).message }, 'the usage file could not be read nor set aside: usage is counted afresh')
        return
      }
      log.error({ err: err.message, setAside: aside }, 'the usage file could not be read: it was set aside and usage is counted afresh')
      return
    }
    if (read === null) return
    const { state, dropped } = read
    // Entries that cannot be counts are left out, each named; the rest of the file is kept.
    if (dropped.length > 0) log.error({ file, dropped: dropped.slice(0, 20), count: dropped.length }, 'the usage file held entries that are not counts: they were left out')
    for (const [key, models] of Object.entries(state.keys)) {
      this.totals.set(key, new Map(Object.entries(models).map(([model, t]) => [model, { ...t }])))
    }
    for (const [date, tokens] of Object.entries(state.days)) this.days.set(date, new Map(Object.entries(tokens)))
    this.forgetOldDays()
  }

  /**
   * Counts one finished request of `key` (a key's name, `anonymous` without keys) on `model`. An entry no request can
   * have used (a negative, fractional or absurd count: a broken or lying upstream's) is refused whole, said in the
   * log, and counts nothing. @returns whether it was counted
   */
  record (key: string, model: string, used: UsedModel): boolean {
    const tokens = [used.promptTokens, used.cachedTokens, used.generatedTokens]
    if (!tokens.every((n) => isUsageCount(n, true)) || used.cachedTokens > used.promptTokens || !isUsageCount(used.queueMs) || !isUsageCount(used.runtimeMs)) {
      this.options.log.warn({ key, model, used }, 'a request\'s usage is not possible counts: not booked')
      return false
    }
    let models = this.totals.get(key)
    if (models === undefined) this.totals.set(key, models = new Map())
    const t = models.get(model) ?? { requests: 0, prompt_tokens: 0, cached_tokens: 0, generated_tokens: 0, queue_ms: 0, runtime_ms: 0 }
    t.requests++
    t.prompt_tokens += used.promptTokens
    t.cached_tokens += used.cachedTokens
    t.generated_tokens += used.generatedTokens
    t.queue_ms += used.queueMs
    t.runtime_ms += used.runtimeMs
    models.set(model, t)
    const today = this.today()
    let day = this.days.get(today)
    if (day === undefined) {
      this.days.set(today, day = new Map())
      this.forgetOldDays()
    }
    day.set(key, (day.get(key) ?? 0) + used.promptTokens + used.generatedTokens)
    this.dirty = true
    return true
  }

  tokensToday (key: string): number {
    return this.days.get(this.today())?.get(key) ?? 0
  }

  /** Today's date in UTC (`2025-01-31`), the day `tokensToday` counts. */
  today (): string {
    return dayOf(this.now())
  }

  /** The keys with usage counted, in name order. */
  keys (): string[] {
    return [...this.totals.keys()].sort()
  }

  has (key: string): boolean {
    return this.totals.has(key)
  }

  /** A key's totals by model, in model order (none for a key that used nothing). */
  modelsOf (key: string): Array<{ model: string, totals: UsageTotals }> {
    const models = this.totals.get(key)
    if (models === undefined) return []
    return [...models].sort(([a], [b]) => a.localeCompare(b)).map(([model, t]) => ({ model, totals: { ...t } }))
  }

  /** Every key's totals on every model. */
  * rows (): Iterable<UsageRow> {
    for (const [key, models] of this.totals) for (const [model, totals] of models) yield { key, model, totals }
  }

  /**
   * Writes the usage to the file if anything was counted since the last write. Writes run one after another; one
   * that fails is said in the log and tried again at the next flush.
   */
  flush (): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty) return
      this.dirty = false
      try {
        await writeUsageFile(this.options.file, this.state())
      } catch (err) {
        this.dirty = true
        this.options.log.error({ err: (err as Error).message, file: this.options.file }, 'the usage could not be written; trying again later')
      }
    })
    return this.writing
  }

  private state (): UsageState {
    return {
      version: 1,
      keys: Object.fromEntries([...this.totals].map(([key, models]) => [key, Object.fromEntries(models)])),
      days: Object.fromEntries([...this.days].map(([date, tokens]) => [date, Object.fromEntries(tokens)])),
    }
  }

  private forgetOldDays (): void {
    const oldest = dayOf(this.now() - (KEPT_DAYS - 1) * DAY_MS)
    for (const date of this.days.keys()) if (date < oldest) this.days.delete(date)
  }
}

function dayOf (ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}
