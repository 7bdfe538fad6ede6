import { GatewayError, RuntimeError } from '../../core/errors.js'

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
