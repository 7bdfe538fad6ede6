import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Checks bearer tokens against the configured keys in constant time. Both sides are hashed first so that
 * the comparison neither leaks a key's length nor stops at the first differing byte.
 */
export class ApiKeys {
  private readonly digests: Buffer[]

  constructor (keys: string[]) {
    this.digests = keys.map(digest)
  }

  get enabled (): boolean { return this.digests.length > 0 }

  /**
   * True when `authorization` is `Bearer <one of the keys>`, or `apiKey` (Anthropic's clients send theirs as
   * `x-api-key`) is one of the keys.
   */
  accepts (authorization: string | undefined, apiKey?: string): boolean {
    const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '')
    const given = match?.[1] ?? apiKey
    if (given === undefined || given.trim() === '') return false
    const candidate = digest(given.trim())
    let found = false
    // No early exit: every key is compared, whatever matched.
    for (const key of this.digests) found = timingSafeEqual(key, candidate) || found
    return found
  }
}

function digest (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
