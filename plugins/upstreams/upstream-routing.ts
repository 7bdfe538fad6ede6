import { createHash } from 'node:crypto'

/** What a request tells the catalog about itself, so that it can pick among several upstreams offering its model. */
export interface UpstreamRoute {
  /** Its conversation's start (system and first user message): the same text goes to the same upstream. Read only when needed. */
  affinity?: () => string
  /** An upstream's requests in flight and its max_concurrent, by its name (the scheduler's count). */
  load?: (upstream: string) => { active: number, limit: number }
  /** Upstreams this request already failed on (failover): not picked again. */
  exclude?: ReadonlySet<string>
}

export type UpstreamRouting = 'prefix' | 'round_robin'

/** The name this gateway's own copy of a model goes by among the upstreams sharing it: no upstream's name can be it. */
export const LOCAL = '(local)'

/**
 * Which of `names` (healthy upstreams offering one model) takes a request. By prefix: rendezvous hashing of the
 * affinity text over the names, so that an upstream going away moves only its own conversations and the others keep
 * their warm prompt caches; but when that one is full (max_concurrent in flight) and another has room, the least
 * loaded. In turns (`turn`) otherwise: round robin, or a request that says nothing of its conversation.
 */
export function pickUpstream (names: readonly string[], mode: UpstreamRouting, route: UpstreamRoute, turn: () => number): number {
  if (names.length === 1) return 0
  const text = mode === 'prefix' ? route.affinity?.() ?? '' : ''
  if (text === '') return turn() % names.length
  let best = 0
  let bestScore = -1n
  for (let i = 0; i < names.length; i++) {
    const score = createHash('sha256').update(names[i]!).update('\0').update(text).digest().readBigUInt64BE(0)
    if (score > bestScore) { best = i; bestScore = score }
  }
  const { load } = route
  if (load === undefined) return best
  const chosen = load(names[best]!)
  if (chosen.active < chosen.limit) return best
  // All full: the conversation's own upstream is still the one to wait for.
  let least = best
  let leastShare = 1
  for (let i = 0; i < names.length; i++) {
    const { active, limit } = load(names[i]!)
    if (active < limit && active / limit < leastShare) { least = i; leastShare = active / limit }
  }
  return least
}
