import { GatewayError } from '../../core/errors.js'

/** A request that breaks one of the protocol's field rules: llama.cpp's 422. */
export class UnprocessableError extends GatewayError {
  constructor (message: string) { super(422, message, { code: 'unprocessable_entity_error' }) }
}

/** A request over one of the size limits: llama.cpp's 413. */
export class RequestTooLargeError extends GatewayError {
  constructor (message: string) { super(413, message, { code: 'request_too_large_error' }) }
}

/** What this model or this engine cannot do (not a decision model, images, a type that needs engine heads): 501. */
export class NotSupportedError extends GatewayError {
  constructor (message: string) { super(501, message, { code: 'not_supported_error' }) }
}

/** One question's prompt is longer than the context a slot holds: llama.cpp's 400 `exceed_context_size_error`. */
export class DecisionContextError extends GatewayError {
  constructor (promptTokens: number, contextLength: number) {
    super(400, `request (${promptTokens} tokens) exceeds the available context size (${contextLength} tokens), try increasing it`, { code: 'exceed_context_size_error', details: { promptTokens, contextLength } })
  }
}

// llama.cpp's error types, by the codes that name one and then by status.
const TYPES_BY_CODE = new Set(['unprocessable_entity_error', 'request_too_large_error', 'not_supported_error', 'exceed_context_size_error', 'exceed_batch_size_error'])
const TYPES_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large_error', 422: 'unprocessable_entity_error', 429: 'rate_limit_error', 501: 'not_supported_error', 503: 'unavailable_error',
}

/**
 * llama.cpp's error body on /v1/systemone, as its test suite pins it: `{"error": {"code": <the HTTP status>, "message",
 * "type"}}`; the TypeSafe SDK reads `error.message`, and retries 429s and 5xx by their Retry-After.
 */
export function decisionErrorBody (reply: { statusCode: number, message: string, code: string | null }): { error: { code: number, message: string, type: string } } {
  const type = reply.code !== null && TYPES_BY_CODE.has(reply.code)
    ? reply.code
    : TYPES_BY_STATUS[reply.statusCode] ?? (reply.statusCode >= 500 ? 'server_error' : 'invalid_request_error')
  return { error: { code: reply.statusCode, message: reply.message, type } }
}
