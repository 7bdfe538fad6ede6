import type { FastifyReply, FastifyRequest } from 'fastify'
import type { QueueLine } from '../leases/lease.js'
import type { KeyQuotas } from './key-quotas.js'
import { promptEstimate } from './prompt-estimate.js'
import { queueShareRule } from './queue-share.js'

declare module '../../core/base/request-usage.js' {
  interface RequestUsage {
    /**
     * Whether the request may join a model's line, as its key's `limits.queue_share` rules (queue-share.ts): called by
     * the scheduler before it queues. @throws TooManyRequestsError
     */
    mayQueue?: (line: QueueLine) => void
    /** The most the answer may generate, as its key's daily limit reserved it. */
    tokenCap?: number
    /** The prompt's tokens as estimated at the door: what a request cut short is booked with. */
    promptEstimate?: number
    /**
     * Set for a key with a daily token limit: reserves the request's tokens once its answer's cap is known
     * (max_tokens after every option layer, -1 for none, 0 for a request that generates nothing) and returns the cap
     * to generate with, lowered to what the key's day has left. @throws TooManyRequestsError
     */
    reserveTokens?: (maxTokens: number) => number
    /**
     * Keeps the request counted against its key's `concurrent` limit past its answer, until the returned release is
     * called: for work the request started that outlives the answer (a router load, answered at once).
     */
    holdAdmission?: () => () => void
  }
}

/**
 * A request that runs a model (`config.scope` infer), at its key's limits: admitted or refused (429, thrown), held
 * until its answer is over however it ends, and marked with what the scheduler and the reservations need of its key.
 * Keys off, or another scope, pass untouched.
 */
export function admitRequest (quotas: KeyQuotas, request: FastifyRequest, reply: FastifyReply): void {
  const grant = request.grant
  if (grant === null || request.routeOptions.config.scope !== 'infer') return
  const admission = quotas.admit(grant)
  // Counted until its answer is over, however it ends (done, failed, or the client gone), and until every hold
  // taken on it is released. The usage plugin's own close listener, added before this one, has booked what it used
  // by then: its reservation can go.
  let holds = 1
  const drop = (): void => { if (--holds === 0) admission.end() }
  if (reply.raw.destroyed) drop()
  else reply.raw.once('close', drop)
  const usage = request.usage
  if (usage) {
    usage.holdAdmission = () => {
      // Past the end nothing is counted any more: a hold then holds nothing.
      if (holds === 0) return () => {}
      holds++
      let released = false
      return () => { if (!released) { released = true; drop() } }
    }
  }
  // The key's share of a model's queue, a rule the scheduler applies where it sees the lines.
  if (usage && grant.limits.queue_share !== undefined) usage.mayQueue = queueShareRule(grant.name, grant.limits.queue_share)
  // A daily limit holds against requests in flight: each reserves its tokens once the scheduler knows its cap.
  if (usage && grant.limits.tokens_per_day !== undefined) {
    const prompt = promptEstimate(request.body)
    usage.promptEstimate = prompt
    usage.reserveTokens = (maxTokens) => (usage.tokenCap = admission.reserve(prompt, maxTokens))
  }
}
