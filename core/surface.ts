/** The API surfaces requests are counted by: a label with few values, whatever the paths. */
export type Surface = 'native' | 'openai' | 'anthropic' | 'embeddings' | 'web' | 'other'

/**
 * Which API a path belongs to (the route's pattern when one matched, else the requested path): embeddings and
 * reranking on either API are one surface, Anthropic's Messages another; the rest of /api is the native (Ollama)
 * surface and the rest of /v1 OpenAI's.
 */
export function surfaceOf (path: string): Surface {
  if (path === '/api/embed' || path === '/api/embeddings' || path === '/v1/embeddings' || path.startsWith('/v1/rerank')) return 'embeddings'
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic'
  if (path.startsWith('/v1/')) return 'openai'
  if (path.startsWith('/api/')) return 'native'
  if (path === '/ui' || path.startsWith('/ui/')) return 'web'
  return 'other'
}
