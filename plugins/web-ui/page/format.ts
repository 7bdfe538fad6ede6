/** Human sizes and times, as the command line shows them. */

export function formatBytes (bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++ }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`
}

/** "in 4 minutes", "stays loaded", "now" for an expiry time. */
export function formatUntil (iso: string, now = Date.now()): string {
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return iso
  // /api/ps's "forever" (keep_alive -1) is a date centuries away.
  if (at - now > 100 * 365 * 24 * 3600_000) return 'stays loaded'
  const seconds = Math.round((at - now) / 1000)
  if (seconds <= 0) return 'now'
  if (seconds < 60) return `in ${seconds} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 120) return `in ${minutes} min`
  return `in ${Math.round(minutes / 60)} h`
}

export function formatSeconds (ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms / 1000)} s`
}

export function formatAgo (time: number | string, now = Date.now()): string {
  const at = typeof time === 'number' ? time : Date.parse(time)
  const minutes = Math.round((now - at) / 60_000)
  if (minutes < 1) return 'just now'
  if (minutes < 60) return `${minutes} min ago`
  const hours = Math.round(minutes / 60)
  if (hours < 48) return `${hours} h ago`
  return `${Math.round(hours / 24)} days ago`
}
