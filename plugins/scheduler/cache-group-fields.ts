import { createHash } from 'node:crypto'

/**
 * The salt a cache group's requests carry to the runtime: a digest, so that the group's name (a team's) and a
 * client's own salt never appear in a slot listing or a saved cache's description.
 */
export function cacheSalt (group: string): string {
  return createHash('sha256').update(group).digest('hex').slice(0, 32)
}

/**
 * What every request of a lease sends besides its own body so that it reuses only its cache group's prompts: the
 * group's salt where the runtime keeps salts apart; where it cannot (a build without llamagate's patch set), no
 * reuse at all, which leaks nothing. Null: no group (the one group of a server without keys), nothing to add.
 */
export function cacheGroupFields (group: string | undefined, separates: boolean): Record<string, unknown> | null {
  if (group === undefined) return null
  return separates ? { cache_salt: cacheSalt(group) } : { cache_prompt: false }
}
