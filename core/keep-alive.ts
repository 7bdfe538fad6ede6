import { BadRequestError } from './errors.js'
import { parseDuration } from './units.js'

/**
 * Reads a request's `keep_alive` as Ollama does: a number is seconds, a string a duration ("10m", "-1m"),
 * 0 unloads after the request, negative keeps the model loaded. Returns ms (Infinity for "forever"), or
 * undefined when the request did not say.
 */
export function parseKeepAlive (value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined
  const ms = parseDuration(value)
  if (ms === null) throw new BadRequestError(`invalid keep_alive ${JSON.stringify(value)}: use seconds (300) or a duration such as "5m", "1h", 0 or -1`)
  return ms < 0 ? Infinity : ms
}
