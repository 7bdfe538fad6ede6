/**
 * Which of an instance's llama-server slots each session holds its cache in, so that a session's next turn asks for
 * that slot (`id_slot`) while it is free, and its prompt is reused there. A slot is pinned only where the instance
 * knows it is free: while any request runs on a slot llama-server chose, no slot is pinned (llama-server's own choice,
 * by prompt similarity, as without a session). Nothing waits for a slot: a session whose slot is busy (its own
 * other request) runs where llama-server puts it. Each slot has at most one owner, the session that used it last,
 * so the sessions kept are at most the slots: an unbounded number of session ids holds no more memory.
 */
export class SessionSlots {
  /** Session key → its slot, the least recently used first. */
  private readonly owners = new Map<string, number>()
  /** Slots held by pinned requests now. */
  private readonly held = new Set<number>()
  /** Requests running on a slot llama-server chose (unknown here). */
  private unpinned = 0

  constructor (private readonly slots: number) {}

  /**
   * The slot a request of `session` (its cache group's key: another group's session of the same id is another
   * session) runs on, taken until `release`; null: llama-server chooses (no session, or no slot known to be free).
   */
  take (session: string | undefined): number | null {
    const owned = session === undefined ? undefined : this.owners.get(session)
    const slot = session === undefined || this.unpinned > 0 ? null : owned !== undefined ? (this.held.has(owned) ? null : owned) : this.freeSlot()
    if (slot === null) {
      this.unpinned++
      return null
    }
    // The slot's earlier owner, if another, loses it: its cache there is about to be replaced.
    // Deleted first, its own entry too: a Map keeps the first insertion's place, and the order is least recent first.
    for (const [other, at] of this.owners) if (at === slot || other === session) this.owners.delete(other)
    this.owners.set(session!, slot)
    this.held.add(slot)
    return slot
  }

  /** The request that took `slot` (null: one llama-server placed) is done. */
  release (slot: number | null): void {
    if (slot === null) this.unpinned--
    else this.held.delete(slot)
  }

  /** The session a slot holds now, if any (for tests and /api/ps-like views). */
  ownerOf (slot: number): string | undefined {
    for (const [session, at] of this.owners) if (at === slot) return session
    return undefined
  }

  /** A free slot for a new session: one no session holds, else the one whose session was seen least recently. */
  private freeSlot (): number | null {
    const free = Array.from({ length: this.slots }, (_, i) => i).filter((i) => !this.held.has(i))
    if (free.length === 0) return null
    const owned = new Set(this.owners.values())
    const unowned = free.find((i) => !owned.has(i))
    if (unowned !== undefined) return unowned
    for (const at of this.owners.values()) if (free.includes(at)) return at
    return free[0]!
  }
}
