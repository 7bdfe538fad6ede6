import { ATTACK_KINDS } from './soak-attack-kinds.js'
import type { Outcome } from './soak-clients.js'
import type { HostileLedger } from './soak-hostile.js'
import type { ResourceSample } from './soak-probes.js'
import { round } from '../stats.js'

// The hostile section of the soak's report: the attackers' answers, the normal clients against their baseline,
// whether memory and descriptors stayed flat under the attack, and what the blob flood left on disk.

/** `answered`: finished, left by design, or the refusal its key expects (chat's 403, batch's 429). */
export interface NormalRequest { startS: number, outcome: Outcome, ms: number, reason: string | null, answered: boolean }
export interface BlobSample { t: number, files: number, partials: number, bytes: number }
/** CPU seconds used so far by the gateway and by the soak's own process, at `t` s into the load. */
export interface CpuMark { t: number, gateway: number, soak: number }

export interface HostileInput {
  ledger: HostileLedger
  normal: NormalRequest[]
  /** Seconds since the load started: the attackers' start, the deadline, and when the last one ended. */
  attack: { startS: number, deadlineS: number, endS: number }
  samples: ResourceSample[]
  /** CPU at the baseline's start and end, and at the attack's. */
  cpu: { baseline: CpuMark[], attack: CpuMark[] }
  blobSamples: BlobSample[]
  blobsAtEnd: BlobSample
  blobBound: number
  /** `.partial` files under the models folder at the end (no pull runs in a hostile soak: there should be none). */
  partialFilesAtEnd: string[]
  settings: {
    body_timeout_s: number, stream_stall_timeout_s: number, idle_connections: number, long_model: string, api_keys: true
    upstream: { model_prefix: string, limits: Record<string, string> }, dodger_tokens_per_day: number, prompt_cache: { min_tokens: number, size: string }
  }
}

const seconds = (ms: number): number => round(ms / 1000, ms < 1000 ? 2 : 1)

function percentile (sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]!)
}

function latency (requests: NormalRequest[]): { finished: number, p50_ms: number | null, p99_ms: number | null, max_ms: number | null } {
  const ms = requests.filter((r) => r.outcome === 'finished').map((r) => r.ms).sort((a, b) => a - b)
  return { finished: ms.length, p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99), max_ms: ms.length > 0 ? Math.round(ms.at(-1)!) : null }
}

const median = (values: number[]): number | null => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const MIN_JUDGED_ATTACK_S = 60

const verdict = (flat: boolean | null): string => flat === null ? 'not judged' : flat ? 'flat' : 'NOT FLAT'

/**
 * Flat, under the attack: the median of its last tenth (at least 5 s, up to the deadline, all attackers still
 * at work) against the median of the tenth after its first fifth (the heap sizes itself to the attackers first).
 * Medians, so that a moment (a round of idle connections let go and opened again) does not decide it. RSS may
 * grow 10% (25% on a run under 6 minutes, which ends before the heap has settled); descriptors 10 or 10%.
 */
export function flatness (samples: ResourceSample[], attack: HostileInput['attack']) {
  const length = attack.deadlineS - attack.startS
  // Two windows of 5 s that do not overlap, after the heap has sized itself: a shorter attack (a smoke run's few
  // seconds) is sampled and reported, not judged.
  const judged = length >= MIN_JUDGED_ATTACK_S
  const window = Math.max(length / 10, 5)
  const earlyFrom = attack.startS + length / 5
  const early = samples.filter((s) => s.t >= earlyFrom && s.t <= earlyFrom + window)
  const last = samples.filter((s) => s.t >= attack.deadlineS - window && s.t <= attack.deadlineS)
  const during = samples.filter((s) => s.t >= attack.startS && s.t <= attack.endS)
  const rssTolerance = length >= 360 ? 0.1 : 0.25
  const of = (key: 'rssMiB' | 'fds', tolerance: (early: number) => number) => {
    const e = median(early.map((s) => s[key]))
    const l = median(last.map((s) => s[key]))
    const flat = judged ? e !== null && l !== null && l <= e + tolerance(e) : null
    return {
      first: during[0] ? round(during[0][key]) : null, last: during.at(-1) ? round(during.at(-1)![key]) : null, max: during.length > 0 ? round(Math.max(...during.map((s) => s[key]))) : null,
      early_median: e === null ? null : round(e), last_median: l === null ? null : round(l), allowed_growth: e === null ? null : round(tolerance(e)), flat,
    }
  }
  return {
    rule: judged
      ? `median of the last ${round(window)} s before the deadline vs the median of ${round(window)} s from ${round(length / 5)} s into the attack; RSS +${rssTolerance * 100}%, descriptors +max(10, 10%)`
      : `not judged: the attack lasted ${round(length)} s, under ${MIN_JUDGED_ATTACK_S} s`,
    samples: during.length,
    rss_mib: of('rssMiB', (e) => e * rssTolerance),
    fds: of('fds', (e) => Math.max(10, e * 0.1)),
  }
}

function cpuPercent (marks: CpuMark[], who: 'gateway' | 'soak'): number | null {
  const [from, to] = marks
  return from === undefined || to === undefined || to.t <= from.t ? null : Math.round((to[who] - from[who]) / (to.t - from.t) * 100)
}

export function buildHostileSection (input: HostileInput) {
  const { ledger, normal, attack } = input
  const problems: string[] = []
  const failed = normal.filter((r) => !r.answered)
  const failures: Record<string, number> = {}
  for (const r of failed) failures[`${r.outcome}: ${r.reason ?? ''}`] = (failures[`${r.outcome}: ${r.reason ?? ''}`] ?? 0) + 1
  if (failed.length > 0) problems.push(`${failed.length} normal request(s) failed: ${Object.entries(failures).map(([k, n]) => `${n} × ${k}`).join('; ')}`)
  for (const kind of ATTACK_KINDS) {
    const entry = ledger.byKind[kind]
    if (entry.attempts === 0) problems.push(`attacker ${kind} never ran`)
    else if (entry.unexpected > 0) problems.push(`attacker ${kind}: ${entry.unexpected} unexpected answer(s) of ${entry.attempts}: ${Object.keys(entry.answers).join('; ')}`)
  }
  const baseline = normal.filter((r) => r.startS < attack.startS)
  const underAttack = normal.filter((r) => r.startS >= attack.startS)
  const before = latency(baseline)
  const during = latency(underAttack)
  const ratio = (a: number | null, b: number | null): number | null => a === null || b === null || a === 0 ? null : round(b / a, 2)
  const resources = flatness(input.samples, attack)
  if (resources.rss_mib.flat === false) problems.push(`RSS not flat under attack: median ${resources.rss_mib.early_median} MiB early, ${resources.rss_mib.last_median} MiB at the end (allowed +${resources.rss_mib.allowed_growth})`)
  if (resources.fds.flat === false) problems.push(`descriptors not flat under attack: median ${resources.fds.early_median} early, ${resources.fds.last_median} at the end (allowed +${resources.fds.allowed_growth})`)
  const blobs = {
    bound: input.blobBound,
    max_files: Math.max(0, ...input.blobSamples.map((s) => s.files)),
    max_partials: Math.max(0, ...input.blobSamples.map((s) => s.partials)),
    max_mib: round(Math.max(0, ...input.blobSamples.map((s) => s.bytes)) / 2 ** 20),
    samples: input.blobSamples.length,
    at_end: { files: input.blobsAtEnd.files, partials: input.blobsAtEnd.partials },
    partial_model_files_at_end: input.partialFilesAtEnd,
  }
  if (blobs.max_files > blobs.bound) problems.push(`the blobs folder held ${blobs.max_files} blobs at once (bound ${blobs.bound})`)
  if (input.partialFilesAtEnd.length > 0) problems.push(`partial files left in the models folder: ${input.partialFilesAtEnd.join(', ')}`)
  if (blobs.at_end.files > 0 || blobs.at_end.partials > 0) problems.push(`the blobs folder still held ${blobs.at_end.files} blob(s) and ${blobs.at_end.partials} partial upload(s) once the flood had deleted its own`)
  return {
    ok: problems.length === 0,
    problems,
    settings: input.settings,
    attack: { start_s: round(attack.startS), deadline_s: round(attack.deadlineS), end_s: round(attack.endS) },
    attackers: ledger.byKind,
    unexpected: ledger.unexpected,
    normal: {
      requests: normal.length,
      answered: normal.length - failed.length,
      left_by_design: normal.filter((r) => r.outcome === 'client_aborted').length,
      failed: failed.length,
      failures,
      // When the first of them were sent (seconds into the load), to be found in the gateway's log.
      failed_at_s: failed.slice(0, 20).map((r) => round(r.startS)),
      baseline: { requests: baseline.length, ...before },
      under_attack: { requests: underAttack.length, ...during },
      p50_ratio: ratio(before.p50_ms, during.p50_ms),
      p99_ratio: ratio(before.p99_ms, during.p99_ms),
    },
    cpu_percent_of_a_core: { gateway: { baseline: cpuPercent(input.cpu.baseline, 'gateway'), under_attack: cpuPercent(input.cpu.attack, 'gateway') }, soak: { baseline: cpuPercent(input.cpu.baseline, 'soak'), under_attack: cpuPercent(input.cpu.attack, 'soak') } },
    resources,
    blobs,
  }
}

export type HostileSection = ReturnType<typeof buildHostileSection>

export function printHostile (h: HostileSection, say: (line?: string) => void): void {
  const s = h.settings
  say(`\n== hostile clients: attack ${h.attack.start_s}-${h.attack.end_s} s (deadline ${h.attack.deadline_s} s); body_timeout ${s.body_timeout_s} s, stream_stall_timeout ${s.stream_stall_timeout_s} s, ${s.idle_connections} idle connections a round, API keys on`)
  say(`  upstream ${s.upstream.model_prefix}m: ${Object.entries(s.upstream.limits).map(([k, v]) => `${k} ${v}`).join(', ')}; the dodger's tokens_per_day ${s.dodger_tokens_per_day}; prompt_cache min_tokens ${s.prompt_cache.min_tokens}, size ${s.prompt_cache.size}`)
  say(`  ${'attacker'.padEnd(18)} ${'attempts'.padStart(8)} ${'unexpected'.padStart(10)}  answers (fastest-slowest)`)
  for (const [kind, e] of Object.entries(h.attackers)) {
    const answers = Object.entries(e.answers).sort((a, b) => b[1] - a[1]).map(([a, n]) => `${n} × ${a} (${seconds(e.ms[a]!.min)}-${seconds(e.ms[a]!.max)} s)`)
    say(`  ${kind.padEnd(18)} ${String(e.attempts).padStart(8)} ${String(e.unexpected).padStart(10)}  ${answers.join('; ')}`)
  }
  for (const u of h.unexpected.slice(0, 10)) say(`    unexpected at ${u.at_s} s: ${u.kind} ${u.variant}: ${u.answer} (${u.ms} ms)`)
  const n = h.normal
  say(`normal clients: ${n.requests} requests, ${n.answered} answered (${n.left_by_design} left by design), ${n.failed} failed`)
  for (const [reason, count] of Object.entries(n.failures)) say(`    ${String(count).padStart(6)}  ${reason}`)
  if (n.failed > 0) say(`    sent at ${n.failed_at_s.join(', ')} s`)
  say(`  finished answers, baseline (warm-up): ${n.baseline.finished}, p50 ${n.baseline.p50_ms} ms, p99 ${n.baseline.p99_ms} ms; under attack: ${n.under_attack.finished}, p50 ${n.under_attack.p50_ms} ms, p99 ${n.under_attack.p99_ms} ms (×${n.p50_ratio} / ×${n.p99_ratio})`)
  const c = h.cpu_percent_of_a_core
  say(`  CPU (% of one of the machine's cores): gateway ${c.gateway.baseline} before, ${c.gateway.under_attack} under attack; the soak's own clients ${c.soak.baseline} before, ${c.soak.under_attack} under attack`)
  const r = h.resources
  say(`gateway under attack (${r.samples} samples): RSS first ${r.rss_mib.first}, last ${r.rss_mib.last}, max ${r.rss_mib.max} MiB; median ${r.rss_mib.early_median} early → ${r.rss_mib.last_median} at the end: ${verdict(r.rss_mib.flat)}`)
  say(`  descriptors first ${r.fds.first}, last ${r.fds.last}, max ${r.fds.max}; median ${r.fds.early_median} early → ${r.fds.last_median} at the end: ${verdict(r.fds.flat)}`)
  say(`  rule: ${r.rule}`)
  say(`blobs folder: at most ${h.blobs.max_files} blobs (bound ${h.blobs.bound}, ${h.blobs.max_mib} MiB) and ${h.blobs.max_partials} partial upload(s) at once; at the end ${h.blobs.at_end.files} and ${h.blobs.at_end.partials}`)
}
