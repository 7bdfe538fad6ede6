import type { FastifyReply } from 'fastify'
import { clientGone } from '../../core/client-gone.js'
import { parseKeepAlive } from '../../core/keep-alive.js'
import { parseModelName } from '../../core/model-name.js'
import { normalizeRequestOptions } from '../../core/request-options.js'
import type { Lease, LeaseSource, Purpose } from '../scheduler/lease.js'
import { runLeased } from '../scheduler/run-leased.js'

export interface LeasedBody { model: string, options?: Record<string, unknown>, keep_alive?: unknown }

/**
 * A whole (never streamed) answer from a leased embedding or rerank instance: the model loaded if needed, its
 * slot released however the work ends, the client's leaving aborting the runtime request.
 */
export async function runWhole<T> (leases: LeaseSource, reply: FastifyReply, body: LeasedBody, purpose: Purpose, work: (lease: Lease) => Promise<T>): Promise<T> {
  parseModelName(body.model)
  const request = { options: normalizeRequestOptions(body.options), keepAliveMs: parseKeepAlive(body.keep_alive), signal: clientGone(reply), purpose }
  return (await runLeased(leases, { model: body.model, request, stream: null, work }))!
}
