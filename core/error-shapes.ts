import type { GatewayError } from './errors.js'

/** What a client sees of an error: the status, one clear sentence, and optional code and headers. */
export interface ErrorReply {
  statusCode: number
  message: string
  code: string | null
  headers: Record<string, string>
}

/** The surfaces that speak OpenAI's error shape live under /v1. */
export function isOpenAiPath (url: string): boolean {
  return url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?')
}

/** The native body: `{"error": "..."}`. */
export function nativeErrorBody (reply: Pick<ErrorReply, 'message'>): { error: string } {
  return { error: reply.message }
}

/** OpenAI's body, as its SDKs parse it: `{"error": {message, type, param, code}}`. */
export function openAiErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode' | 'code'>): {
  error: { message: string, type: string, param: string | null, code: string | null }
} {
  return {
    error: {
      message: reply.message,
      type: reply.statusCode >= 500 ? 'server_error' : 'invalid_request_error',
      param: null,
      code: reply.code,
    },
  }
}

/** Anthropic's Messages API (its SDKs and Claude Code) lives under /v1/messages. */
export function isAnthropicPath (url: string): boolean {
  return url === '/v1/messages' || url.startsWith('/v1/messages/') || url.startsWith('/v1/messages?')
}

// Anthropic's error types by status (its API reference, "Errors"); 503 is its "overloaded".
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 503: 'overloaded_error', 529: 'overloaded_error',
}

/** Anthropic's body, as its SDKs parse it: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode'>): { type: 'error', error: { type: string, message: string } } {
  const type = ANTHROPIC_TYPES[reply.statusCode] ?? (reply.statusCode >= 500 ? 'api_error' : 'invalid_request_error')
  return { type: 'error', error: { type, message: reply.message } }
}

/** The body for a URL: Anthropic's under /v1/messages, OpenAI's elsewhere under /v1, the native one elsewhere. */
export function errorBodyFor (url: string, reply: ErrorReply): unknown {
  if (isAnthropicPath(url)) return anthropicErrorBody(reply)
  return isOpenAiPath(url) ? openAiErrorBody(reply) : nativeErrorBody(reply)
}

/** The SSE event name of a stream's error event, where the surface names its events (Anthropic: `error`). */
export function errorEventNameFor (url: string): string | null {
  return isAnthropicPath(url) ? 'error' : null
}

export function fromGatewayError (err: GatewayError): ErrorReply {
  return { statusCode: err.statusCode, message: err.message, code: err.code, headers: err.headers }
}
