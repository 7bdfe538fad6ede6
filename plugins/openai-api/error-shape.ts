import type { ErrorReply } from '../../core/base/error-shapes.js'
import type { SurfaceSpec } from '../../core/base/surfaces.js'

// The request field an error is about, where OpenAI names it (its SDKs and agents read `param`).
const PARAM_OF_CODE: Readonly<Record<string, string>> = { previous_response_not_found: 'previous_response_id' }

/** OpenAI's body, as its SDKs parse it: `{"error": {message, type, param, code}}`. */
function openAiErrorBody (reply: Pick<ErrorReply, 'message' | 'statusCode' | 'code' | 'details'>): {
  error: { message: string, type: string, param: string | null, code: string | null }
} {
  const tooLong = reply.code === 'context_length_exceeded' && reply.details?.promptTokens !== undefined
  return {
    error: {
      // OpenAI's own words for a prompt too long: clients that compact their history look for the code, and some read the figures.
      message: tooLong
        ? `This model's maximum context length is ${reply.details!.contextLength} tokens. However, your messages resulted in ${reply.details!.promptTokens} tokens. Please reduce the length of the messages.`
        : reply.message,
      type: reply.statusCode >= 500 ? 'server_error' : reply.statusCode === 429 ? rateLimitType(reply) : 'invalid_request_error',
      param: tooLong ? 'messages' : (reply.code !== null ? PARAM_OF_CODE[reply.code] : undefined) ?? null,
      code: reply.code,
    },
  }
}

/** OpenAI's type of a 429 (code `rate_limit_exceeded`): which of its limits a request ran into, tokens or requests. */
function rateLimitType (reply: Pick<ErrorReply, 'details'>): string {
  return reply.details?.tokensPerDay !== undefined ? 'tokens' : 'requests'
}

/** Everything under /v1 speaks OpenAI's error shape (its models and embeddings routes too), unless a surface of its own says otherwise. */
export const OPENAI_SURFACE: SurfaceSpec = { label: 'openai', paths: ['/v1', '/v1/*'], errorShape: { body: openAiErrorBody } }
