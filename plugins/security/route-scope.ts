import type { Scope } from './keys-file.js'

/** What each scope allows, for the 403 that says what a key lacks. */
export const SCOPE_WORDS: Record<Scope, string> = {
  infer: 'run models (chat, generate, embed, rerank)',
  manage: 'manage models (pull, create, copy, delete, stop, import)',
  admin: 'read the server\'s administration (metrics, runtimes, RPC workers, others\' usage)',
}

/** Body fields that name a model on some route (`/api/copy`: source and destination; `/api/create`: from). */
const MODEL_FIELDS = ['model', 'name', 'source', 'destination', 'from'] as const

/**
 * The models a request names: in its body's model fields, as the path's wildcard (`/v1/models/<name>`), or as the
 * query's `model` (llama-server's router mode: `GET /props?model=`).
 */
export function modelsNamedIn (body: unknown, params: unknown, query?: unknown): string[] {
  const names: string[] = []
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    for (const field of MODEL_FIELDS) {
      const value = (body as Record<string, unknown>)[field]
      if (typeof value === 'string' && value !== '') names.push(value)
    }
  }
  const wildcard = (params as Record<string, unknown> | undefined)?.['*']
  if (typeof wildcard === 'string' && wildcard !== '') names.push(wildcard)
  const asked = (query as Record<string, unknown> | undefined)?.model
  if (typeof asked === 'string' && asked !== '') names.push(asked)
  return names
}
