import { ATTACK_KINDS, type AttackKind, type AttackResult, type AttackWorker } from './soak-attack-kinds.js'

// The hostile soak's ledger: every attacker's answers by kind and variant, and the loops that run them until
// the attack's end (an attempt under way then is finished; a kind's first attempt always is).

export interface KindLedger {
  attempts: number
  /** What the gateway answered, counted. */
  answers: Record<string, number>
  by_variant: Record<string, Record<string, number>>
  unexpected: number
  /** Milliseconds to each answer (a cut, a refusal): the fastest and the slowest. */
  ms: Record<string, { min: number, max: number }>
}

const KEPT_UNEXPECTED = 50

export class HostileLedger {
  readonly byKind = Object.fromEntries(ATTACK_KINDS.map((k) => [k, { attempts: 0, answers: {}, by_variant: {}, unexpected: 0, ms: {} }])) as Record<AttackKind, KindLedger>
  /** The first unexpected answers in full, with when they came (seconds since the load started). */
  readonly unexpected: Array<AttackResult & { at_s: number }> = []

  add (result: AttackResult, atS: number): void {
    const entry = this.byKind[result.kind]
    entry.attempts++
    entry.answers[result.answer] = (entry.answers[result.answer] ?? 0) + 1
    entry.by_variant[result.variant] ??= {}
    entry.by_variant[result.variant]![result.answer] = (entry.by_variant[result.variant]![result.answer] ?? 0) + 1
    const ms = Math.round(result.ms)
    const seen = entry.ms[result.answer]
    entry.ms[result.answer] = seen === undefined ? { min: ms, max: ms } : { min: Math.min(seen.min, ms), max: Math.max(seen.max, ms) }
    if (!result.expected) {
      entry.unexpected++
      if (this.unexpected.length < KEPT_UNEXPECTED) this.unexpected.push({ ...result, ms, at_s: Math.round(atS * 10) / 10 })
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs every worker in a loop until `deadline` (ms since the epoch), then its `finish`. An attempt that throws
 * (a request the gateway never answered, a connection that failed) is an unexpected answer, not the end.
 */
export async function runAttackers (workers: AttackWorker[], deadline: number, ledger: HostileLedger, since: () => number): Promise<void> {
  const record = (results: AttackResult[]): void => { for (const r of results) ledger.add(r, since()) }
  const guarded = async (kind: AttackKind, run: () => Promise<AttackResult[]>): Promise<void> => {
    const t0 = performance.now()
    try {
      record(await run())
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code
      record([{ kind, variant: 'any', answer: `the attempt failed: ${(err as Error).name}${cause ? ` (${cause})` : ''}`, expected: false, ms: performance.now() - t0 }])
    }
  }
  await Promise.all(workers.map(async (worker) => {
    do {
      await guarded(worker.kind, worker.attempt)
      if (Date.now() < deadline) await sleep(Math.min(worker.pauseMs, Math.max(0, deadline - Date.now())))
    } while (Date.now() < deadline)
    if (worker.finish) await guarded(worker.kind, worker.finish)
  }))
}
