import type { EventHub } from '../../core/base/event-hub.js'
import type { Instance } from './instance.js'
import type { SchedulerEvents } from './scheduler-events.js'

// A preparation waits for the loads given room to end (they would share the processor), at most this long.
const SETTLE_MAX_MS = 10_000

/** Resolves once none of `instances()` is starting its runtime (at the latest after SETTLE_MAX_MS). */
export function loadsSettled (instances: () => readonly Instance[], events: EventHub<SchedulerEvents>): Promise<void> {
  const starting = (): boolean => instances().some((i) => i.phase === 'starting')
  if (!starting()) return Promise.resolve()
  return new Promise<void>((resolve) => {
    const look = (): void => { if (!starting()) done() }
    const done = (): void => { clearTimeout(timer); events.off('loaded', look); events.off('loadFailed', look); resolve() }
    const timer = setTimeout(done, SETTLE_MAX_MS)
    events.on('loaded', look)
    events.on('loadFailed', look)
  })
}
