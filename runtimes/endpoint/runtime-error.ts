import { ContextExceededError, GatewayError, RuntimeError } from '../../core/base/errors.js'

interface RuntimeErrorBody { error?: string | { message?: string, type?: string, n_prompt_tokens?: number, n_ctx?: number } }

/** The gateway error for a runtime's error answer, carrying the runtime's own message. */
export function runtimeErrorFrom (status: number, text: string): GatewayError {
  let message = `runtime answered ${status}`
  try {
    const { error } = JSON.parse(text) as RuntimeErrorBody
    const detail = typeof error === 'string' ? error : error?.message
    if (detail) message = detail
    // llama-server counts the prompt before it refuses it: the gateway can load the model with a larger context.
    if (typeof error === 'object' && error.type === 'exceed_context_size_error' && error.n_prompt_tokens && error.n_ctx) {
      return new ContextExceededError(error.n_prompt_tokens, error.n_ctx)
    }
  } catch {
    // Not JSON: keep the status line.
  }
  // A refused key is the gateway's own (an upstream's key in config.yaml), never the client's.
  if (status === 401 || status === 403) return new RuntimeError(`the runtime refused the gateway's credentials (${status}): ${message}`)
  // The runtime's 4xx are about the request (a bad grammar); its 5xx are its own failures. A request too large (413)
  // or breaking a field's rule (422, System One's) keeps its status: clients tell those apart from a malformed one.
  return status < 500 ? new GatewayError(status === 413 || status === 422 ? status : 400, message, { code: 'runtime_rejected' }) : new RuntimeError(message)
}

