import type { Readable } from 'node:stream'

/**
 * The most bytes of an answer that are read. A local llama-server is the gateway's own and is read whole; another
 * server may send anything, so its client bounds what it reads (plugins/upstreams: config.yaml's limits.upstream_*).
 */
export interface AnswerLimits {
  /** One answer, whole or streamed. */
  answerBytes: number
  /** One error answer (a status of 400 or more). */
  errorBytes: number
  /** The longest line, event or chunk of a stream held whole while it arrives. */
  lineBytes: number
}

/** Limits and the error to end a request with past one: the reader says which limit, the limits' owner names it. */
export interface ReadLimits extends AnswerLimits {
  tooLarge(limit: keyof AnswerLimits): Error
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
