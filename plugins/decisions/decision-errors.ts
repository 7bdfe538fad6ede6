import { GatewayError } from '../../core/base/errors.js'

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
