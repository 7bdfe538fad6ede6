import type { Readable } from 'node:stream'
import { RuntimeError } from '../../core/errors.js'
import { formatBytes } from '../../core/units.js'

/**
 * The most bytes of a runtime's answers that are read: an upstream's come from config.yaml (`limits.upstream_*`),
 * since another server may send anything; a local llama-server is the gateway's own and is read whole (Infinity).
 */
export interface AnswerLimits {
  /** One answer, whole or streamed. */
  answerBytes: number
  /** One error answer (a status of 400 or more). */
  errorBytes: number
  /** The longest line, event or chunk of a stream held whole while it arrives. */
  lineBytes: number
}

export const UNLIMITED: AnswerLimits = { answerBytes: Infinity, errorBytes: Infinity, lineBytes: Infinity }

const SETTING: Record<keyof AnswerLimits, string> = { answerBytes: 'upstream_answer_size', errorBytes: 'upstream_error_size', lineBytes: 'upstream_line_size' }
const WHAT: Record<keyof AnswerLimits, string> = { answerBytes: 'an answer', errorBytes: 'an error answer', lineBytes: 'a line (an event, a chunk)' }

/** The error of an answer cut at one of its limits: the request ends with it, and its connection is dropped. */
export function pastLimit (runtime: string, limit: keyof AnswerLimits, limits: AnswerLimits): RuntimeError {
  return new RuntimeError(`the runtime of model "${runtime}" sent ${WHAT[limit]} over ${formatBytes(limits[limit])} (limits.${SETTING[limit]}): the rest was not read, and the connection was dropped`, [], 'answer_too_large')
}

/**
 * A body read whole, `maxBytes` at most: one that says (Content-Length, `declared`) or turns out to be longer is
 * destroyed there, its connection with it (never kept for another request), and `tooLarge()` is thrown.
 */
export async function readAtMost (body: Readable, maxBytes: number, tooLarge: () => Error, declared?: unknown): Promise<Buffer> {
  if (Number(declared) > maxBytes) {
    body.destroy()
    throw tooLarge()
  }
  const chunks: Buffer[] = []
  let length = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    length += chunk.length
    // Leaving the loop destroys the body.
    if (length > maxBytes) throw tooLarge()
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, length)
}
