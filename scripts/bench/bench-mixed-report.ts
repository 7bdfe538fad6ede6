import type { RunFigures } from './bench-mixed-timeline.js'

/** The mixed scenario's figures over rounds: medians per setup, and each llamagate setup's against router mode. */

/** The figures compared with router mode's, as llamagate's over router's. */
const RATIOS = ['wall_s', 'ttft_p50_ms', 'ttft_p95_ms', 'ttft_max_ms', 'evaluated_prompt_tokens', 'swaps', 'idle_while_waiting_s'] as const satisfies ReadonlyArray<keyof RunFigures>

export const ROUTER = 'router'

/** Each figure's median over the rounds (for an even count, the mean of the middle two). */
export function medianFigures (rounds: RunFigures[]): RunFigures {
  const keys = Object.keys(rounds[0]!) as Array<keyof RunFigures>
  return Object.fromEntries(keys.map((k) => [k, median(rounds.map((r) => r[k]))])) as unknown as RunFigures
}

export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  const m = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  return Math.round(m * 1000) / 1000
}

/** Each llamagate setup's medians over router mode's; null where router mode's is 0. */
export function ratios (medians: Record<string, RunFigures>): Record<string, Record<string, number | null>> {
  const router = medians[ROUTER]!
  return Object.fromEntries(Object.entries(medians).filter(([setup]) => setup !== ROUTER).map(([setup, m]) => [setup,
    Object.fromEntries(RATIOS.map((k) => [k, router[k] === 0 ? null : Math.round((m[k] / router[k]) * 1000) / 1000])),
  ]))
}

/** The table for one seed's medians, and the ratios under it. */
export function printSeed (say: (line: string) => void, seed: number, rounds: number, medians: Record<string, RunFigures>): void {
  const width = Math.max(12, ...Object.keys(medians).map((s) => s.length + 2))
  say(`\nseed ${seed}, medians of ${rounds} round${rounds === 1 ? '' : 's'}: first token p50 / p95 / max, wall, evaluated prompt tokens (of all), loads, idle while others waited, failed`)
  for (const [setup, m] of Object.entries(medians)) {
    say(`${setup.padEnd(width)} ${s(m.ttft_p50_ms)} / ${s(m.ttft_p95_ms)} / ${s(m.ttft_max_ms)}   wall ${m.wall_s.toFixed(1).padStart(6)} s   ` +
      `${String(Math.round(m.evaluated_prompt_tokens)).padStart(7)} of ${String(Math.round(m.prompt_tokens)).padStart(7)} tokens   ${String(m.swaps).padStart(4)} loads (median stay ${m.residency_p50_s.toFixed(1)} s)   ` +
      `idle ${m.idle_while_waiting_s.toFixed(1).padStart(5)} s   failed ${m.failed_requests} (${m.failed_attempts} attempts)`)
  }
  for (const [setup, r] of Object.entries(ratios(medians))) {
    say(`${setup} / router: wall ${f(r.wall_s)}, p50 ${f(r.ttft_p50_ms)}, p95 ${f(r.ttft_p95_ms)}, max ${f(r.ttft_max_ms)}, evaluated tokens ${f(r.evaluated_prompt_tokens)}, loads ${f(r.swaps)}, idle while waiting ${f(r.idle_while_waiting_s)}`)
  }
}

const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`.padStart(8)
const f = (ratio: number | null | undefined): string => ratio === null || ratio === undefined ? '-' : ratio.toFixed(3)

/** The ratios' medians over the seeds: the figure the targets are read against. */
export function ratiosOverSeeds (perSeed: Array<Record<string, Record<string, number | null>>>): Record<string, Record<string, number | null>> {
  const setups = Object.keys(perSeed[0] ?? {})
  return Object.fromEntries(setups.map((setup) => [setup, Object.fromEntries(RATIOS.map((k) => {
    const values = perSeed.map((r) => r[setup]?.[k]).filter((v): v is number => typeof v === 'number')
    return [k, values.length === 0 ? null : median(values)]
  }))]))
}
