import type { Readable } from 'node:stream'
import { GatewayError, RuntimeError } from '../../core/errors.js'
import type { Lease } from '../scheduler/scheduler.js'

/**
 * Sends a request to the runtime of a lease and returns its body once the status is known to be good.
 *
 * A pooled connection can be closed by the runtime just as a request goes out on it; then nothing was
 * generated, so the request is sent once more on a fresh connection. Runtime errors (4xx/5xx) become
 * gateway errors carrying the runtime's own message.
 */
export async function postToRuntime (lease: Lease, path: string, body: unknown): Promise<Readable> {
  const payload = JSON.stringify(body)
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await lease.pool.request({
        method: 'POST', path, body: payload, signal: lease.signal,
        headers: { 'content-type': 'application/json' },
      })
      if (response.statusCode >= 400) throw await runtimeError(response.statusCode, response.body)
      return response.body
    } catch (err) {
      if (lease.signal.aborted) throw lease.signal.reason
      if (attempt === 1 && isStaleConnection(err)) continue
      throw err
    }
  }
}

function isStaleConnection (err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE'
}

async function runtimeError (status: number, body: Readable): Promise<GatewayError> {
  return runtimeErrorFrom(status, await readText(body).catch(() => ''))
}

/** The gateway error for a runtime's error answer, carrying the runtime's own message. */
export function runtimeErrorFrom (status: number, text: string): GatewayError {
  let message = `runtime answered ${status}`
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } | string }
    const detail = typeof parsed.error === 'string' ? parsed.error : parsed.error?.message
    if (detail) message = detail
  } catch {
    // Not JSON: keep the status line.
  }
  // The runtime's 4xx are about the request (prompt too long, bad grammar); its 5xx are its own failures.
  return status < 500 ? new GatewayError(400, message, { code: 'runtime_rejected' }) : new RuntimeError(message)
}

export async function readText (body: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}
