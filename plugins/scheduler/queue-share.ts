import { QueueFullError, TooManyRequestsError } from '../../core/errors.js'
import type { RequestUsage } from '../../core/request-usage.js'
import type { Instance } from './instance.js'

/**
 * Whether a request may join an instance's line: the whole line holds at most limits.queue_length, and a key with a
 * `queue_share` (the quotas' rule, on the request's usage record) at most that part of it, so that one key cannot fill
 * the line for every other. `oneRequestMs`: about how long one request of the model takes (Retry-After's guess).
 * @throws QueueFullError, TooManyRequestsError naming the key and its share
 */
export function checkQueueShare (instance: Instance, usage: RequestUsage | undefined, queueLength: number, oneRequestMs: () => number): void {
  if (instance.queued >= queueLength) throw new QueueFullError(instance.model.name)
  const key = usage?.key
  if (key === undefined || usage?.queueShare === undefined) return
  const share = Math.max(1, Math.floor(usage.queueShare * queueLength))
  const mine = instance.queuedOf(key)
  if (mine < share) return
  // One of its own requests ahead has to be served before this one may queue: about one request's time.
  throw new TooManyRequestsError(`the API key "${key}" has ${mine} request${mine === 1 ? '' : 's'} waiting for model "${instance.model.name}", its share of the queue ` +
    `(limits.queue_share ${usage.queueShare} in the keys file, of limits.queue_length ${queueLength}: ${share}); retry when one is served`, oneRequestMs() / 1000, { limit: share })
}
