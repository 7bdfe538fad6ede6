// How the command line shows sizes, times and tables to a person.
export { formatBytes } from '../../base/units.js'

const UNITS: Array<[string, number]> = [
  ['year', 365 * 24 * 3600_000], ['month', 30 * 24 * 3600_000], ['week', 7 * 24 * 3600_000],
  ['day', 24 * 3600_000], ['hour', 3600_000], ['minute', 60_000], ['second', 1000],
]
/** "4 minutes from now", "2 days ago", "now". */
export function relativeTime (when: Date | number | string, now = Date.now()): string {
  const at = new Date(when).getTime()
  if (!Number.isFinite(at)) return 'unknown'
  const delta = at - now
  for (const [unit, ms] of UNITS) {
    const count = Math.trunc(Math.abs(delta) / ms)
    if (count >= 1) return `${count} ${unit}${count === 1 ? '' : 's'} ${delta > 0 ? 'from now' : 'ago'}`
  }
  return 'now'
}

/** A duration in milliseconds as "1.2s", "3m20s". */
export function formatDuration (ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms % 60_000) / 1000)
  return minutes < 60 ? `${minutes}m${seconds}s` : `${Math.floor(minutes / 60)}h${minutes % 60}m`
}

/** Rows under a header, each column as wide as its widest cell, three spaces apart, as `ollama list` prints. */
export function table (header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => i === cells.length - 1 ? c : c.padEnd(widths[i]! + 3)).join('').trimEnd()
  return [line(header), ...rows.map(line)].join('\n') + '\n'
}
