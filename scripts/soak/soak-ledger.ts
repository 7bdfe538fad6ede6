import { accounted, OUTCOMES, type Outcome, type RequestResult, type RequestSpec } from './soak-clients.js'

/** One request the soak could not account for, in full. */
export interface Unaccounted { surface: string, stream: boolean, model: string, key: string | null, by: string, outcome: Outcome, status: number | null, reason: string | null, ms: number }

/** Every request of the soak (its clients' and its faults'), counted by outcome, surface, model and reason. */
export class Ledger {
  total = 0
  readonly byOutcome = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>
  readonly bySurface: Record<string, Record<string, number>> = {}
  readonly byModel: Record<string, Record<string, number>> = {}
  readonly reasons: Record<string, Record<string, number>> = {}
  /** Every request that was not accounted for, in full (there should be none). */
  readonly unaccounted: Unaccounted[] = []
  maxMs = 0

  add (spec: RequestSpec, result: RequestResult, by: string): void {
    this.total++
    this.byOutcome[result.outcome]++
    const surface = `${spec.surface}${spec.stream ? ' stream' : ''}`
    const bump = (table: Record<string, Record<string, number>>, key: string, sub: string): void => {
      table[key] ??= {}
      table[key][sub] = (table[key][sub] ?? 0) + 1
    }
    bump(this.bySurface, surface, result.outcome)
    bump(this.byModel, spec.model, result.outcome)
    if (result.reason !== null) bump(this.reasons, result.outcome, result.reason)
    if (!accounted(spec, result.outcome)) this.unaccounted.push({ surface: spec.surface, stream: spec.stream, model: spec.model, key: spec.key?.name ?? null, by, outcome: result.outcome, status: result.status, reason: result.reason, ms: Math.round(result.ms) })
    if (result.outcome !== 'hung') this.maxMs = Math.max(this.maxMs, result.ms)
  }
}
