import type { ErrorReply } from '../../core/error-shapes.js'
import type { SurfaceSpec } from '../../core/surfaces.js'

// The request field an error is about, where OpenAI names it (its SDKs and agents read `param`).
const PARAM_OF_CODE: Readonly<Record<string, string>> = { previous_response_not_found: 'previous_response_id' }

/** OpenAI's body, as its SDKs parse it: `{"error": {message, type, param, code}}`. */
function openAiErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode' | 'code'>): {
  error: { message: string, type: string, param: string | null, code: string | null }
} {
  return {
    error: {
      message: reply.message,
      type: reply.statusCode >= 500 ? 'server_error' : 'invalid_request_error',
      param: (reply.code !== null ? PARAM_OF_CODE[reply.code] : undefined) ?? null,
      code: reply.code,
    },
  }
}

/** Everything under /v1 speaks OpenAI's error shape (its models and embeddings routes too), unless a surface of its own says otherwise. */
export const OPENAI_SURFACE: SurfaceSpec = { label: 'openai', paths: ['/v1', '/v1/*'], errorShape: { body: openAiErrorBody } }
