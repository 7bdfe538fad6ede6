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

/** The body for a URL: OpenAI's shape under /v1, the native one elsewhere. */
export function errorBodyFor (url: string, reply: ErrorReply): unknown {
  return isOpenAiPath(url) ? openAiErrorBody(reply) : nativeErrorBody(reply)
}

export function fromGatewayError (err: GatewayError): ErrorReply {
  return { statusCode: err.statusCode, message: err.message, code: err.code, headers: err.headers }
}
