import { BadRequestError } from './errors.js'
import { parseDuration } from './units.js'

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
