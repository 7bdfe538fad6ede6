// Longer ids are cut: enough to tell sessions apart, bounded in what each one keeps.
const MAX_SESSION_CHARS = 256

/**
 * The session a request says it belongs to, by what clients send: pi's `x-session-affinity` and `session_id`
 * headers (and `session_id` in the body), OpenAI's `prompt_cache_key`; where none is sent, the caller's own id
 * (OpenAI's `user`, Anthropic's `metadata.user_id`), which agents such as Claude Code send per session. Undefined
 * when the request names none: it is placed by its conversation's start, as before.
 */
export function sessionOf (headers: Record<string, string | string[] | undefined>, body: unknown): string | undefined {
  const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? body as Record<string, unknown> : {}
  const metadata = typeof fields.metadata === 'object' && fields.metadata !== null ? fields.metadata as Record<string, unknown> : {}
  for (const value of [headers['x-session-affinity'], headers.session_id, fields.session_id, fields.prompt_cache_key, fields.user, metadata.user_id]) {
    const text = Array.isArray(value) ? value[0] : value
    if (typeof text === 'string' && text.trim() !== '') return text.trim().slice(0, MAX_SESSION_CHARS)
  }
  return undefined
}
