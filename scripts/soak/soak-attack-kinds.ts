// What an attacker of the hostile soak is, apart from the attackers themselves (scripts/soak/soak-attackers.ts and
// the three that have files of their own), so that each of them and the ledger can name it.

export const ATTACK_KINDS = ['slow_body', 'non_reader', 'schema_bomb', 'refused_field', 'blob_flood', 'idle_connections', 'hostile_upstream', 'quota_dodger', 'cache_writer'] as const
export type AttackKind = (typeof ATTACK_KINDS)[number]

export interface AttackResult {
  kind: AttackKind
  variant: string
  /** What the gateway did, in words that count alike ("400 schema_too_large", "cut at body_timeout"). */
  answer: string
  expected: boolean
  ms: number
}

/** One attacker: what it does once, the pause before it does it again, and what it tidies at the end. */
export interface AttackWorker {
  kind: AttackKind
  attempt: () => Promise<AttackResult[]>
  pauseMs: number
  finish?: () => Promise<AttackResult[]>
}
