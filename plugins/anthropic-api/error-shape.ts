import type { ErrorReply } from '../../core/base/error-shapes.js'
import type { SurfaceSpec } from '../../core/base/surfaces.js'

// Anthropic's error types by status (its API reference, "Errors"); 503 is its "overloaded". Only the types of its
// SDK's ErrorType: a 413 is an invalid request there (the API's own `request_too_large` is not among them).
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'invalid_request_error', 429: 'rate_limit_error', 503: 'overloaded_error', 504: 'timeout_error', 529: 'overloaded_error',
}

/**
 * Anthropic's body, as its SDKs parse it: `{"type":"error","error":{"type","message"},"request_id"}`. The request id
 * is Anthropic's own (its `request-id` header's); the gateway has none to give, so it is null, as the type allows.
 */
function anthropicErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode' | 'code' | 'details'>): { type: 'error', error: { type: string, message: string }, request_id: null } {
  const type = ANTHROPIC_TYPES[reply.statusCode] ?? (reply.statusCode >= 500 ? 'api_error' : 'invalid_request_error')
  // Anthropic's words for a prompt too long, which Claude Code reads the figures from.
  const message = reply.code === 'context_length_exceeded' && reply.details?.promptTokens !== undefined
    ? `prompt is too long: ${reply.details.promptTokens} tokens > ${reply.details.contextLength} maximum`
    : reply.message
  return { type: 'error', error: { type, message }, request_id: null }
}

/** Anthropic's Messages API (its SDKs and Claude Code) lives under /v1/messages; its streams name their error event. */
export const ANTHROPIC_SURFACE: SurfaceSpec = { label: 'anthropic', paths: ['/v1/messages', '/v1/messages/*'], errorShape: { body: anthropicErrorBody, eventName: 'error' } }
