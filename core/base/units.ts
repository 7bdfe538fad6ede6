// Durations and sizes as people write them in config files and requests.
import { BadRequestError } from './errors.js'

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000,
}

/**
 * Parses a duration the way Ollama reads `keep_alive`: a number is seconds, a string is a Go-style
 * duration (`"5m"`, `"1h30m"`, `"500ms"`, `"-1m"`). A bare numeric string is accepted as seconds too,
 * since YAML and environment variables make every number a string.
 * Returns milliseconds (negative means "forever"), or `null` when the text is not a duration.
 */
export function parseDuration(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value * 1000 : null
  if (typeof value !== 'string') return null
  const text = value.trim()
  if (text === '') return null
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text) * 1000
  const match = /^(-?)((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/.exec(text)
  if (!match) return null
  let total = 0
  for (const part of match[2]!.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(part[1]) * DURATION_UNITS[part[2]!]!
  }
  return match[1] === '-' ? -total : total
}

const BINARY_UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']

/**
 * A byte count for a person: in the largest unit that keeps it at 1 or more, with about three significant digits, so
 * that two sizes in one message can be told apart ("11.0 MiB", "6.00 MiB", "512 bytes").
 */
export function formatBytes (bytes: number): string {
  let value = bytes
  let unit = 0
  while (Math.abs(value) >= 1024 && unit < BINARY_UNITS.length - 1) { value /= 1024; unit++ }
  if (unit === 0) return `${bytes} bytes`
  const digits = Math.abs(value) < 10 ? value.toFixed(2) : Math.abs(value) < 100 ? value.toFixed(1) : String(Math.round(value))
  return `${digits} ${BINARY_UNITS[unit]}`
}

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3,
}

/** Parses a byte size: an integer, or a number with a unit (`16MiB`, `1.5 GB`). `null` when invalid. */
export function parseSize(value: unknown): number | null {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : null
  if (typeof value !== 'string') return null
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value)
  const unit = match ? SIZE_UNITS[match[2]!.toLowerCase()] : undefined
  if (!match || unit === undefined) return null
  return Math.round(Number(match[1]) * unit)
}

/** The longest delay a Node timer takes (about 24.8 days); a longer keep_alive means "stay loaded". */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Reads a request's `keep_alive` as Ollama does: a number is seconds, a string a duration ("10m", "-1m"),
 * 0 unloads after the request, negative (or longer than a timer can wait) keeps the model loaded. Returns ms (Infinity for "forever"), or
 * undefined when the request did not say.
 */
export function parseKeepAlive (value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined
  const ms = parseDuration(value)
  if (ms === null) throw new BadRequestError(`invalid keep_alive ${JSON.stringify(value)}: use seconds (300) or a duration such as "5m", "1h", 0 or -1`)
  return ms < 0 || ms > MAX_TIMER_MS ? Infinity : ms
}
