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
