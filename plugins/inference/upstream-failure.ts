import { GatewayError, RuntimeError } from '../../core/base/errors.js'
import type { Lease } from '../leases/lease.js'

// How long to wait for the supervisor to report a process exit after the connection to it broke.
const EXIT_NOTICE_MS = 1000

/**
 * The error to report for a request whose runtime connection failed. A runtime that died closes the socket
 * a moment before its exit is reported; waiting that moment gives the client the real reason (killed by
 * SIGKILL, its last log lines) instead of "other side closed".
 */
export async function upstreamFailure (lease: Lease, err: unknown): Promise<unknown> {
  if (lease.signal.aborted) return lease.signal.reason
  if (err instanceof GatewayError) return err
  // A bug of the gateway's own (a TypeError, a stack overflow) is not the runtime's failure: it goes to the error
  // handler as it is, to be logged in full and answered 500.
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return err
  await new Promise<void>((resolve) => {
    // Whichever comes first ends the wait and takes the other away: nothing is left on the lease's signal.
    const onAbort = (): void => { clearTimeout(timer); resolve() }
    const timer = setTimeout(() => { lease.signal.removeEventListener('abort', onAbort); resolve() }, EXIT_NOTICE_MS)
    lease.signal.addEventListener('abort', onAbort, { once: true })
  })
  if (lease.signal.aborted) return lease.signal.reason
  return new RuntimeError(`lost the connection to the runtime of model "${lease.model.name}": ${(err as Error).message}`)
}
