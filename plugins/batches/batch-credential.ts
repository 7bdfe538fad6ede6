import { timingSafeEqual } from 'node:crypto'
import { UnauthorizedError } from '../../core/base/errors.js'
import type { Authenticator, AuthGrant, Grant } from '../../core/platform/plugin-api.js'
import type { GrantSnapshot } from './batch-store.js'

/** The headers a batch's own requests carry, inside this process only (app.inject): never sent by a client. */
export const TOKEN_HEADER = 'x-llamagate-batch-token'
export const BATCH_HEADER = 'x-llamagate-batch-id'

/**
 * The credential a batch's requests run under: this process's random token, and the batch they belong to. Its grant
 * is the batch's key as the keys file has it now (`current`: a key revoked or gone since refuses the batch's requests,
 * and changed scopes, models and limits apply), its requests background work unless a line asks otherwise (within
 * what the key may ask). A batch made while keys were off runs without a grant, as its requests then did. Any other
 * request that shows the header is refused: the token never leaves the process.
 */
export function batchCredential (token: string, grantOf: (batchId: string) => GrantSnapshot | null | undefined, current: (name: string) => Grant | 'revoked' | null): Authenticator {
  const expected = Buffer.from(token)
  return {
    name: 'batches',
    order: -100,
    // A batch's requests are its key's: counted, limited and cached as that key's own.
    actsForKeys: true,
    authenticate (request): AuthGrant | undefined {
      const given = request.headers[TOKEN_HEADER]
      if (given === undefined) return undefined
      const shown = Buffer.from(String(given))
      if (shown.length !== expected.length || !timingSafeEqual(shown, expected)) throw new UnauthorizedError('invalid batch credential')
      const snapshot = grantOf(String(request.headers[BATCH_HEADER] ?? ''))
      if (snapshot === undefined) throw new UnauthorizedError('no such batch')
      if (snapshot === null) return undefined
      const grant = current(snapshot.name)
      if (grant === 'revoked') throw new UnauthorizedError(`the API key "${snapshot.name}" that made this batch was revoked`)
      if (grant === null) throw new UnauthorizedError(`the API key "${snapshot.name}" that made this batch is no longer in the keys file`)
      const rule = grant.priority
      const max = rule?.max ?? (rule?.default === 'high' ? 'high' : 'interactive')
      return {
        name: grant.name,
        scopes: [...grant.scopes],
        models: [...grant.models],
        limits: { ...grant.limits },
        ...(grant.cacheGroup !== null ? { cacheGroup: grant.cacheGroup } : {}),
        priority: { default: 'background', max },
      }
    },
  }
}
