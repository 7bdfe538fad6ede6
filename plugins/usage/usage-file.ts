import { readFile } from 'node:fs/promises'
import { writeWhole } from '../../core/write-whole.js'
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

/** The usage kept in `file`; null when there is none yet. @throws UsageFileError when it cannot be read as usage */
export async function readUsageFile (file: string): Promise<UsageState | null> {
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
  const problem = problemOf(raw)
  if (problem !== null) throw new UsageFileError(file, problem)
  return raw as UsageState
}

/** Writes `file` whole (core/write-whole.ts): a crash leaves the old or the new. */
export async function writeUsageFile (file: string, state: UsageState): Promise<void> {
  await writeWhole(file, JSON.stringify(state))
}

// Every count is checked: one NaN or string would poison the totals (and the metrics) for good.
function problemOf (raw: unknown): string | null {
  if (!isRecord(raw) || raw.version !== 1) return 'expected {"version": 1, "keys": {...}, "days": {...}}'
  if (!isRecord(raw.keys) || !isRecord(raw.days)) return 'expected "keys" and "days" mappings'
  for (const [key, models] of Object.entries(raw.keys)) {
    if (!isRecord(models)) return `keys.${key}: expected a mapping of models`
    for (const [model, totals] of Object.entries(models)) {
      if (!isRecord(totals) || FIELDS.some((f) => !isCount(totals[f]))) return `keys.${key}.${model}: expected ${FIELDS.join(', ')}, each a number at least 0`
    }
  }
  for (const [date, tokens] of Object.entries(raw.days)) {
    if (!DATE.test(date) || !isRecord(tokens)) return `days.${date}: expected a date's mapping of keys to tokens`
    for (const [key, count] of Object.entries(tokens)) if (!isCount(count)) return `days.${date}.${key}: expected a number at least 0`
  }
  return null
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isCount (value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}
