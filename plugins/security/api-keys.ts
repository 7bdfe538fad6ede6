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

  /** True when `authorization` is `Bearer <one of the keys>`. */
  accepts (authorization: string | undefined): boolean {
    const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '')
    if (!match) return false
    const candidate = digest(match[1]!.trim())
    let found = false
    // No early exit: every key is compared, whatever matched.
    for (const key of this.digests) found = timingSafeEqual(key, candidate) || found
    return found
  }
}

function digest (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
