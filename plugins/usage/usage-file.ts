import { readFile } from 'node:fs/promises'
import { writeWhole } from '../../core/base/write-whole.js'
import type { UsageTotals } from './usage-book.js'

/** What `usage.json` holds: totals by key and model, and each key's tokens of the last few UTC days. */
export interface UsageState {
  version: 1
  /** Key name → model name → totals since the file was started. */
  keys: Record<string, Record<string, UsageTotals>>
  /** UTC date (`2025-01-31`) → key name → prompt plus generated tokens that day. */
  days: Record<string, Record<string, number>>
}

/** The file is there but is not usage this version can read (cut short, edited by hand, another version's). */
export class UsageFileError extends Error {
  constructor (file: string, reason: string) {
    super(`usage file ${file}: ${reason}`)
    this.name = 'UsageFileError'
  }
}

const FIELDS: ReadonlyArray<keyof UsageTotals> = ['requests', 'prompt_tokens', 'cached_tokens', 'generated_tokens', 'queue_ms', 'runtime_ms']
const DATE = /^\d{4}-\d{2}-\d{2}$/

/** What a usage file held that could be read: its state, and each entry left out, with why. */
export interface ReadUsage { state: UsageState, dropped: string[] }

/**
 * The usage kept in `file`; null when there is none yet. An entry that is not a possible count (negative, fractional,
 * absurd, not a number) is left out and named in `dropped`: one bad entry never costs the others.
 * @throws UsageFileError when it cannot be read as usage at all (not JSON, not this version's shape)
 */
export async function readUsageFile (file: string): Promise<ReadUsage | null> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new UsageFileError(file, (err as Error).message)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new UsageFileError(file, `not JSON: ${(err as Error).message}`)
  }
  if (!isRecord(raw) || raw.version !== 1) throw new UsageFileError(file, 'expected {"version": 1, "keys": {...}, "days": {...}}')
  if (!isRecord(raw.keys) || !isRecord(raw.days)) throw new UsageFileError(file, 'expected "keys" and "days" mappings')
  const dropped: string[] = []
  const state: UsageState = { version: 1, keys: Object.create(null) as UsageState['keys'], days: Object.create(null) as UsageState['days'] }
  for (const [key, models] of Object.entries(raw.keys)) {
    if (!isRecord(models)) { dropped.push(`keys.${key}: expected a mapping of models`); continue }
    const kept: Record<string, UsageTotals> = Object.create(null)
    for (const [model, totals] of Object.entries(models)) {
      const bad = isRecord(totals) ? FIELDS.find((f) => !isUsageCount(totals[f], !f.endsWith('_ms'))) : 'totals'
      if (bad !== undefined) dropped.push(`keys.${key}.${model}: ${bad} is not a count (each of ${FIELDS.join(', ')} a whole number from 0 to ${MAX_COUNT})`)
      else kept[model] = Object.fromEntries(FIELDS.map((f) => [f, (totals as Record<string, number>)[f]])) as unknown as UsageTotals
    }
    state.keys[key] = kept
  }
  for (const [date, tokens] of Object.entries(raw.days)) {
    if (!DATE.test(date) || !isRecord(tokens)) { dropped.push(`days.${date}: expected a date's mapping of keys to tokens`); continue }
    const kept: Record<string, number> = Object.create(null)
    for (const [key, count] of Object.entries(tokens)) {
      if (isUsageCount(count, true)) kept[key] = count
      else dropped.push(`days.${date}.${key}: not a count of tokens`)
    }
    state.days[date] = kept
  }
  return { state, dropped }
}

/** Writes `file` whole (core/base/write-whole.ts): a crash leaves the old or the new. */
export async function writeUsageFile (file: string, state: UsageState): Promise<void> {
  await writeWhole(file, JSON.stringify(state))
}

/**
 * The largest count a usage entry may hold: far past any real sum (a trillion tokens), short of where a double stops
 * counting whole numbers. Past it, or negative, or not whole, a count is a forged or broken one.
 */
export const MAX_COUNT = 1e12

/** A count the usage book can hold: a whole number (milliseconds may have fractions) from 0 to MAX_COUNT. */
export function isUsageCount (value: unknown, whole = false): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_COUNT && (!whole || Number.isInteger(value))
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
