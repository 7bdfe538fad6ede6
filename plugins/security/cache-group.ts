import { BadRequestError } from '../../core/base/errors.js'

/** The longest `cache_salt` a request may send: vLLM's salts are a user's hash, tens of characters. */
const MAX_SALT = 256

/**
 * The prompt-cache group a request computes and reuses prompts in: its key's group (null while every key is in one),
 * split further by the request's own `cache_salt` (vLLM's field: a client keeping its users apart, or a front
 * llamagate keeping its keys apart on this one). A salt only ever narrows the group a key has: it can never join
 * another key's. Undefined: the one shared group of a server without keys.
 * @throws BadRequestError for a `cache_salt` that is not a string of at most 256 characters
 */
export function cacheGroupOf (keyGroup: string | null | undefined, body: unknown): string | undefined {
  const salt = typeof body === 'object' && body !== null ? (body as { cache_salt?: unknown }).cache_salt : undefined
  if (salt === undefined || salt === null || salt === '') return keyGroup ?? undefined
  if (typeof salt !== 'string' || salt.length > MAX_SALT) throw new BadRequestError(`cache_salt: expected a string of at most ${MAX_SALT} characters`, 'invalid_cache_salt')
  // The separator cannot appear in a key's group name (keys file: letters, digits, . _ -).
  return `${keyGroup ?? ''}\u0000${salt}`
}
