import type { ErrorReply } from '../../core/base/error-shapes.js'
import type { SurfaceSpec } from '../../core/base/surfaces.js'

/** llama-server's error types by status (server-common.cpp format_error_response), as its router mode answers them. */
const TYPE_OF_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large_error', 422: 'unprocessable_entity_error', 429: 'rate_limit_error',
  501: 'not_supported_error', 503: 'unavailable_error',
}

/** The types llama-server's errors carry (server-common.h error_type), which an error's own code may name. */
const TYPES = new Set([...Object.values(TYPE_OF_STATUS), 'server_error', 'exceed_context_size_error', 'exceed_batch_size_error'])

/**
 * llama-server's body: `{"error": {code, message, type}}`, `code` the HTTP status; the type is the error's code where
 * that names one of llama-server's types (`exceed_context_size_error`), else the status's.
 */
export function llamaServerErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode' | 'code'>): { error: { code: number, message: string, type: string } } {
  const named = reply.code !== null && TYPES.has(reply.code) ? reply.code : undefined
  const type = named ?? TYPE_OF_STATUS[reply.statusCode] ?? (reply.statusCode >= 500 ? 'server_error' : 'invalid_request_error')
  return { error: { code: reply.statusCode, message: reply.message, type } }
}

/** llama-server's router-mode paths and its own routes, answered in its error shape (its clients read `error.message`). */
export const ROUTER_SURFACE: SurfaceSpec = {
  label: 'router',
  paths: ['/models', '/models/load', '/models/unload', '/props', '/tokenize', '/detokenize', '/apply-template', '/infill'],
  errorShape: { body: llamaServerErrorBody },
}
