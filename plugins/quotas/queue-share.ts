import { TooManyRequestsError } from '../../core/base/errors.js'
import type { QueueLine } from '../leases/lease.js'

/**
 * A key's `limits.queue_share` as the rule it gives a model's queue: its requests waiting there may fill at most that
 * part of limits.queue_length (at least one), so that one key cannot fill the line for every other.
 * @throws TooManyRequestsError naming the key, the model and its share, with about one request's wait
 */
export function queueShareRule (key: string, queueShare: number): (line: QueueLine) => void {
  return (line) => {
    const share = Math.max(1, Math.floor(queueShare * line.queueLength))
    const mine = line.waitingOf(key)
    if (mine < share) return
    // One of its own requests ahead has to be served before this one may queue: about one request's time.
    throw new TooManyRequestsError(`the API key "${key}" has ${mine} request${mine === 1 ? '' : 's'} waiting for model "${line.model}", its share of the queue ` +
      `(limits.queue_share ${queueShare} in the keys file, of limits.queue_length ${line.queueLength}: ${share}); retry when one is served`, line.oneRequestMs() / 1000, { limit: share })
  }
}
