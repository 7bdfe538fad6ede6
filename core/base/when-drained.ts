import type { Writable } from 'node:stream'

/**
 * Resolves when a writable (a response, a socket) can take more, or is gone. With `stallMs`, a writable that
 * takes nothing for that long is destroyed (and so resolves): a client that never reads a stream would
 * otherwise hold its runtime slot, and the runtime behind it, for as long as it keeps the connection.
 */
export function whenDrained (writable: Writable, stallMs?: number): Promise<void> {
  if (writable.destroyed || !writable.writableNeedDrain) return Promise.resolve()
  return new Promise((resolve) => {
    const stalled = stallMs === undefined
      ? null
      // Without an error: the socket's owner has nothing to handle, the client sees its connection closed.
      : setTimeout(() => writable.destroy(), stallMs)
    const done = (): void => {
      if (stalled !== null) clearTimeout(stalled)
      writable.off('drain', done)
      writable.off('close', done)
      resolve()
    }
    writable.once('drain', done)
    writable.once('close', done)
  })
}
