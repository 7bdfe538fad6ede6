/**
 * A backend of a plugin's own (`app.backends.add`): model names it serves, answered by the plugin in llama-server's
 * OpenAI-compatible paths. The gateway speaks to it as to an OpenAI-compatible upstream (plugins/upstreams): every
 * surface (native, OpenAI, Anthropic) reaches it through those paths, and its requests keep the keys, the per-key
 * line, the quotas and the usage records of any other model.
 */
export interface BackendSpec {
  /** How errors, logs and metrics name it: 1-64 of `A-Z a-z 0-9 . _ -`, unique among backends and upstreams. */
  name: string
  /** The model names it serves and lists (/api/tags, /v1/models); asked again at each listing. */
  models(): readonly string[]
  /** Whether it also serves `model`, a name it does not list (a family, a prefix). @default none beyond `models()` */
  claims?(model: string): boolean
  /**
   * Answers one call in an OpenAI-compatible path: `/v1/chat/completions` (what chats, Responses and Anthropic
   * Messages come as) or `/v1/completions` (raw prompts: /api/generate, OpenAI's completions), with the body as
   * llama-server would get it (`stream`, `max_tokens`, sampling). A whole answer is JSON; a streamed one
   * (`body.stream`) is Server-Sent Events (`data: {...}` events ending with `data: [DONE]`), as OpenAI's. A status
   * other than 2xx is an error answer (`{"error": {"message": ...}}`); `signal` aborts when the client leaves.
   * A throw fails only that request: a 502 in its surface's shape naming the backend.
   */
  fetch(path: string, body: Record<string, unknown>, signal: AbortSignal): Promise<Response>
  /** The most requests sent to it at once; the rest wait in the per-key line (limits.queue_length). @default 16 */
  maxConcurrent?: number
  /**
   * The longest it may take to begin its answer, and to send each next piece of a stream: past it the request
   * fails with a 502 naming this bound (`timeoutMs`), and `signal` aborts. @default 300000
   */
  timeoutMs?: number
}

/** Where plugins add their backends (`app.backends`). */
export interface Backends {
  /**
   * Serves `spec`'s models from now on. A stored model of the same name is served here, not by it.
   * @throws Error when the name is not one or is taken (the plugin's registration fails, naming it)
   */
  add(spec: BackendSpec): void
}
