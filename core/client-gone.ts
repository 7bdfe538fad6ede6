import type { FastifyReply } from 'fastify'

/** Aborted when the client of a (non-streamed) request goes away before its answer was sent. */
export function clientGone (reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected')) })
  return controller.signal
}
