import type { ErrorReply } from '../../core/error-shapes.js'
import type { SurfaceSpec } from '../../core/surfaces.js'

/** llama-server's error types by status (server-common.cpp format_error_response), as its router mode answers them. */
const TYPE_OF_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  501: 'not_supported_error', 503: 'unavailable_error',
}

/** llama-server's body: `{"error": {code, message, type}}`, `code` the HTTP status. */
function llamaServerErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode'>): { error: { code: number, message: string, type: string } } {
  const type = TYPE_OF_STATUS[reply.statusCode] ?? (reply.statusCode >= 500 ? 'server_error' : 'invalid_request_error')
  return { error: { code: reply.statusCode, message: reply.message, type } }
}

/** llama-server's router-mode paths, answered in its error shape (its clients read `error.message`). */
export const ROUTER_SURFACE: SurfaceSpec = {
  label: 'router',
  paths: ['/models', '/models/load', '/models/unload', '/props'],
  errorShape: { body: llamaServerErrorBody },
}
