import type { Writable } from 'node:stream'

/** Resolves when a writable (a response, a socket) can take more, or is gone. */
export function whenDrained (writable: Writable): Promise<void> {
  if (writable.destroyed || !writable.writableNeedDrain) return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => { writable.off('drain', done); writable.off('close', done); resolve() }
    writable.once('drain', done)
    writable.once('close', done)
  })
}
