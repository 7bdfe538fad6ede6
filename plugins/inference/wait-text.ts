import type { WaitProgress } from '../leases/lease.js'

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

/**
 * A waiting request's progress as one line of an SSE comment: `waiting: loading acme/tiny (2.1 s, usually 3.0 s)`,
 * `waiting: to start loading acme/tiny (4.0 s)`, `queued: position 2 of 3 for acme/tiny (1.0 s, about 6.0 s left)`.
 * Read by people (curl -N) and logs; clients skip it.
 */
export function waitText (wait: WaitProgress): string {
  switch (wait.stage) {
    case 'room':
      // Before its llama-server is made: room for it (other models unloading), or a conversion, or a moment's set-up.
      return `waiting: to start loading ${wait.model} (${seconds(wait.elapsedMs)}${wait.expectedMs !== undefined ? `, about ${seconds(wait.expectedMs)} left` : ''})`
    case 'load':
      return `waiting: loading ${wait.model} (${seconds(wait.elapsedMs)}${wait.expectedMs !== undefined ? `, usually ${seconds(wait.expectedMs)}` : ''})`
    case 'queue':
      return `queued: position ${wait.position} of ${wait.of} for ${wait.model} (${seconds(wait.elapsedMs)}${wait.expectedMs !== undefined ? `, about ${seconds(wait.expectedMs)} left` : ''})`
  }
}
