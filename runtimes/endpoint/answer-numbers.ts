import { RuntimeError } from '../../core/base/errors.js'

/**
 * The most tool calls one answer may make, numbered 0 to 127. Calls are gathered by their number: an upstream (or a
 * runtime gone wrong) that numbered one 10^7 had an array of that length made and sent (48 MB, the loop held 3.3 s).
 * Models make a handful of calls at once; OpenAI's own parallel calls are far below this.
 */
export const MAX_TOOL_CALLS = 128

/** The largest token count an answer may state: more than any context holds, far below what overflows a sum. */
export const MAX_TOKEN_COUNT = 1_000_000_000

/** The error of an answer whose numbers cannot be: the request ends with it; nothing of it is counted. */
function impossible (what: string): RuntimeError {
  return new RuntimeError(`the runtime answered ${what}`, [], 'invalid_runtime_answer')
}

/**
 * A tool call's number in a streamed answer (`index`), or `next` where it has none (each such call is a new one).
 * @throws an error of the answer for a number that is not 0 to MAX_TOOL_CALLS - 1
 */
export function toolCallIndex (index: unknown, next: number): number {
  const at = index ?? next
  if (typeof at === 'number' && Number.isInteger(at) && at >= 0 && at < MAX_TOOL_CALLS) return at
  throw impossible(`a tool call numbered ${String(JSON.stringify(at)).slice(0, 40)}: an answer's calls are numbered 0 to ${MAX_TOOL_CALLS - 1}`)
}

/**
 * A token count from an answer (`field` names it for the message), or null where the answer does not give it.
 * @throws an error of the answer for anything but a whole number from 0 to MAX_TOKEN_COUNT (a negative count booked
 * as it came took a key's day to -2,000,000 tokens)
 */
export function tokenCount (value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT) return value
  throw impossible(`an impossible token count, ${field} = ${String(JSON.stringify(value)).slice(0, 40)}: a count is a whole number from 0 to ${MAX_TOKEN_COUNT}`)
}

/** A duration from an answer (ms or ns): a finite number of 0 or more, else 0 (durations are shown, never booked). */
export function duration (value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0
}
