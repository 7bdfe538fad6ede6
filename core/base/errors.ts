// Errors that mean something to a client. Each carries its HTTP status; the error handler turns them into
// the native `{"error": "..."}` or OpenAI's `{"error": {...}}` shape. Anything else is a bug and answers 500.

// Marks a GatewayError made by any copy of this module: a plugin package may bundle its own llamagate/plugin, and a
// plugin's tests may run the sources beside dist/; each surface must still answer its errors with their status.
const GATEWAY_ERROR = Symbol.for('llamagate.gateway-error')

export class GatewayError extends Error {
  /** `x instanceof GatewayError` holds for one made by another copy of this module too (its subclasses: their own). */
  static override [Symbol.hasInstance] (value: unknown): boolean {
    if (this !== GatewayError) return Function.prototype[Symbol.hasInstance].call(this, value)
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[GATEWAY_ERROR] === true
  }

  readonly [GATEWAY_ERROR] = true
  /** HTTP status to answer with. */
  readonly statusCode: number
  /** A machine-readable code for the OpenAI shape (`model_not_found`, ...). */
  readonly code: string | null
  /** Extra response headers, such as `Retry-After`. */
  readonly headers: Record<string, string>
  /** Figures a surface may word the error with in its clients' terms (a context's size, say). */
  readonly details: Readonly<Record<string, number>>

  constructor (statusCode: number, message: string, options: { code?: string, headers?: Record<string, string>, details?: Record<string, number>, cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.name = new.target.name
    this.statusCode = statusCode
    this.code = options.code ?? null
    this.headers = options.headers ?? {}
    this.details = options.details ?? {}
  }
}

export class BadRequestError extends GatewayError {
  constructor (message: string, code?: string) { super(400, message, { code }) }
}

export class InvalidModelNameError extends GatewayError {
  constructor (name: string) { super(400, `invalid model name ${JSON.stringify(name)}: expected <owner>/<name>, each part 1-96 characters of A-Z a-z 0-9 . _ -`, { code: 'invalid_model_name' }) }
}

export class UnauthorizedError extends GatewayError {
  constructor (message: string) { super(401, message, { code: 'invalid_api_key', headers: { 'WWW-Authenticate': 'Bearer' } }) }
}

export class ForbiddenError extends GatewayError {
  constructor (message: string, code?: string) { super(403, message, { code }) }
}

export class ModelNotFoundError extends GatewayError {
  constructor (readonly model: string) { super(404, `model "${model}" not found, pull it first`, { code: 'model_not_found' }) }
}

export class NotFoundError extends GatewayError {
  constructor (message: string) { super(404, message, { code: 'not_found' }) }
}

export class ConflictError extends GatewayError {
  constructor (message: string) { super(409, message, { code: 'conflict' }) }
}

/** The request queue of a model is full: the client should come back shortly. */
export class QueueFullError extends GatewayError {
  constructor (model: string, retryAfterSeconds = 1) {
    super(503, `server busy: the request queue for "${model}" is full, try again shortly`, {
      code: 'queue_full', headers: { 'Retry-After': String(retryAfterSeconds) },
    })
  }
}

/** The inference runtime failed to start or died; the message carries the reason from its log. */
export class RuntimeError extends GatewayError {
  constructor (message: string, readonly logTail: string[] = [], code = 'runtime_error') {
    super(502, message, { code })
  }
}

/**
 * The client went away before its answer was whole: nothing to answer, nobody to tell, nothing wrong with the
 * server. 499 is nginx's "client closed request", for the log's sake.
 */
export class ClientGoneError extends GatewayError {
  constructor () { super(499, 'the client went away before the answer was complete', { code: 'client_gone' }) }
}

/** The server is shutting down or a model is being unloaded under a request. */
export class UnavailableError extends GatewayError {
  constructor (message: string, code = 'unavailable') { super(503, message, { code }) }
}

/**
 * A SafeTensors → GGUF conversion failed. 422 when the tool ran and refused the model's files (unsupported
 * architecture, no tokenizer, truncated weights): the request was understood, but this model cannot be
 * processed as it is, and trying again will not help; the message is the tool's own reason and `toolTail`
 * its last lines. 503 when the tools are missing (the message says what to install); 500 when the tool hung
 * past conversion.timeout or wrote a file that is not a GGUF (the server's fault, not the model's).
 */
export class ConversionError extends GatewayError {
  constructor (message: string, readonly toolTail: string[] = [], statusCode = 422, code = 'conversion_failed') {
    super(statusCode, message, { code })
  }
}

/**
 * A prompt longer than the context a model can be given. `promptTokens` and `contextLength` are the runtime's
 * count and the most the model holds (its trained context, or the window a request fixed itself): each surface
 * words it as its clients parse it (OpenAI's `context_length_exceeded`, Anthropic's "prompt is too long").
 */
export class ContextExceededError extends GatewayError {
  constructor (readonly promptTokens: number, readonly contextLength: number, why = '') {
    super(400, `the input length exceeds the context length: the prompt is ${promptTokens} tokens, and the model holds ${contextLength}${why}`, {
      code: 'context_length_exceeded', details: { promptTokens, contextLength },
    })
  }
}

/**
 * An API key went past one of its limits (the keys file's `limits`): the message names the key and the limit, and
 * `Retry-After` says when the request would pass. `tokensPerDay` in the details marks a limit on tokens, not
 * requests (OpenAI's shape words the two apart).
 */
export class TooManyRequestsError extends GatewayError {
  constructor (message: string, retryAfterSeconds: number, details: Record<string, number> = {}) {
    const seconds = Math.max(1, Math.ceil(retryAfterSeconds))
    super(429, message, { code: 'rate_limit_exceeded', headers: { 'Retry-After': String(seconds) }, details: { retryAfterSeconds: seconds, ...details } })
  }
}
