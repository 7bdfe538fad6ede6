import type { UpstreamLimits } from './upstream-config.js'
import { RuntimeError } from '../../core/base/errors.js'
import { formatBytes } from '../../core/base/units.js'
import type { AnswerLimits, ReadLimits } from '../../runtimes/index.js'

const SETTING: Record<keyof AnswerLimits, string> = { answerBytes: 'upstream_answer_size', errorBytes: 'upstream_error_size', lineBytes: 'upstream_line_size' }
const WHAT: Record<keyof AnswerLimits, string> = { answerBytes: 'an answer', errorBytes: 'an error answer', lineBytes: 'a line (an event, a chunk)' }

/**
 * What is read of one upstream model's answers (config.yaml's limits.upstream_*, since another server may send
 * anything), and the error past each: the request ends with it, and its connection is dropped. `name` is the
 * endpoint's ("<model> (upstream <name>)").
 */
export function upstreamReadLimits (name: string, limits: UpstreamLimits): ReadLimits {
  const { answerBytes, errorBytes, lineBytes } = limits
  const read = { answerBytes, errorBytes, lineBytes }
  return { ...read, tooLarge: (limit) => pastLimit(name, limit, read) }
}

/** The error of an answer cut at one of its limits. */
function pastLimit (runtime: string, limit: keyof AnswerLimits, limits: AnswerLimits): RuntimeError {
  return new RuntimeError(`the runtime of model "${runtime}" sent ${WHAT[limit]} over ${formatBytes(limits[limit])} (limits.${SETTING[limit]}): the rest was not read, and the connection was dropped`, [], 'answer_too_large')
}
