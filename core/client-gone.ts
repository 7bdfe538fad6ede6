import type { FastifyReply } from 'fastify'
import { ClientGoneError } from './errors.js'

/** Aborted when the client of a (non-streamed) request goes away before its answer was sent. */
export function clientGone (reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort(new ClientGoneError()) })
  return controller.signal
}
