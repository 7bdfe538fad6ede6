import type { FastifyReply, FastifyRequest } from 'fastify'
import { clientGone } from '../../core/server/event-stream.js'
import { parseKeepAlive } from '../../core/base/units.js'
import type { AskPurpose, Lease, LeaseSource } from '../leases/lease.js'
import { runLeased } from './run-leased.js'
import { askedPriority } from './asked-priority.js'

export interface LeasedBody { model: string, options?: Record<string, unknown>, keep_alive?: unknown }

/**
 * A whole (never streamed) answer from a leased embedding, rerank or decision instance: the model loaded if needed, its
 * slot released however the work ends, the client's leaving aborting the runtime request.
 */
export async function runWhole<T> (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, body: LeasedBody, purpose: AskPurpose, work: (lease: Lease) => Promise<T>): Promise<T> {
  const run = { model: body.model, options: body.options, keepAliveMs: parseKeepAlive(body.keep_alive), purpose, log: request.log, usage: request.usage, priority: askedPriority(request.body), signal: clientGone(reply), stream: null, work }
  return (await runLeased(leases, run))!
}
