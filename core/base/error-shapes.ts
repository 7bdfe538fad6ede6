import { STATUS_CODES } from 'node:http'
import type { GatewayError } from './errors.js'

/** What a client sees of an error: the status, one clear sentence, and optional code and headers. */
export interface ErrorReply {
  statusCode: number
  message: string
  code: string | null
  headers: Record<string, string>
  /** Figures a surface may word the error with (GatewayError.details). */
  details?: Readonly<Record<string, number>>
}

/** The native body, the contract's default: `{"error": "..."}`. */
export function nativeErrorBody (reply: Pick<ErrorReply, 'message'>): { error: string } {
  return { error: reply.message }
}

export function fromGatewayError (err: GatewayError): ErrorReply {
  return { statusCode: err.statusCode, message: err.message, code: err.code, headers: err.headers, details: err.details }
}

/** An error of http-errors (@fastify/sensible's `app.httpErrors.notFound()`, `reply.badRequest()`, ...). */
export interface HttpErrorLike { statusCode: number, expose: boolean, message: string, headers?: Record<string, string> }

export function isHttpError (err: unknown): err is HttpErrorLike {
  if (!(err instanceof Error)) return false
  const { statusCode, expose } = err as Partial<HttpErrorLike>
  return typeof statusCode === 'number' && statusCode >= 400 && statusCode < 600 && typeof expose === 'boolean'
}

/**
 * Its status and message as the plugin gave them (a 5xx's message is the status's text: http-errors marks it not
 * for clients), and a code from the status's name (`not_found`), as the gateway's own errors carry one.
 */
export function fromHttpError (err: HttpErrorLike): ErrorReply {
  const text = STATUS_CODES[err.statusCode] ?? 'error'
  return {
    statusCode: err.statusCode,
    message: err.expose ? err.message : text,
    code: text.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, ''),
    headers: { ...err.headers },
  }
}
