import type { IncomingMessage } from 'node:http'

/**
 * What a refused upload still sends is read and dropped for up to `lingerMs`, then its connection closes (sooner
 * when the body ends: the connection then serves on). Closed at once, with bytes still arriving, the socket is
 * reset, and a client still writing often reports a broken pipe instead of the refusal it was sent.
 */
export function dropRest (request: IncomingMessage, lingerMs: number): void {
  if (request.complete) return
  // destroy() on the message closes its socket; an injected request (no socket of its own) just ends.
  const timer = setTimeout(() => { request.destroy() }, lingerMs).unref()
  request.once('end', () => { clearTimeout(timer) })
  request.once('close', () => { clearTimeout(timer) })
  request.resume()
}
