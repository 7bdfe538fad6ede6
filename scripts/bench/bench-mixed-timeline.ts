import { percentile } from '../stats.js'
import type { TurnRecord } from './bench-mixed-workload.js'

/**
 * What a run of the mixed scenario did, read from its timeline: the requests as the client saw them, and which
 * model the server said it had loaded, asked every `intervalMs` (router mode's `GET /models`, llamagate's
 * `/api/ps`). Both setups are asked the same way, so their residencies are measured alike.
 */

/** At `t` (ms from the run's start), the models the server had loaded and loading (by the models' indexes). */
export interface Observation { t: number, loaded: number[], loading: number[] }

export type Interval = [number, number]

/**
 * Asks `url` every `intervalMs` which models it has loaded, until `stop`. `kind` picks the question; `indexOf` maps the
 * server's model name to the models' index (undefined: not one of them).
 */
export function watchResidency (url: string, kind: 'router' | 'llamagate', indexOf: (name: string) => number | undefined, now: () => number, intervalMs = 100): { stop: () => Promise<Observation[]> } {
  const observations: Observation[] = []
  let stopped = false
  const poll = async (): Promise<void> => {
    while (!stopped) {
      const asked = now()
      try {
        const states = kind === 'router' ? await routerStates(url) : await gatewayStates(url)
        const t = (asked + now()) / 2
        const pick = (state: string): number[] => states.filter((s) => s.state === state).map((s) => indexOf(s.name)).filter((i): i is number => i !== undefined)
        observations.push({ t, loaded: pick('loaded'), loading: pick('loading') })
      } catch { /* a poll that failed says nothing */ }
      await new Promise((resolve) => setTimeout(resolve, intervalMs))
    }
  }
  const running = poll()
  return { stop: async () => { stopped = true; await running; return observations } }
}

async function routerStates (url: string): Promise<Array<{ name: string, state: string }>> {
  const list = await (await fetch(`${url}/models`)).json() as { data: Array<{ id: string, status?: { value?: string } }> }
  return list.data.map((m) => ({ name: m.id, state: m.status?.value ?? 'unknown' }))
}

/**
 * A model llamagate is unloading still holds the room (its caches are saved, its process stops), as router mode's
 * model does until its child has exited, which its `/models` calls loaded all the while: both alike.
 */
async function gatewayStates (url: string): Promise<Array<{ name: string, state: string }>> {
  const ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<{ name: string, state?: string }> }
  return ps.models.map((m) => ({ name: m.name, state: m.state === 'unloading' ? 'loaded' : m.state ?? 'loaded' }))
}

/** One model's stay in the room: from the first sign it was loaded to the last, before another took its place. */
export interface Residency { model: number, start: number, end: number }

/**
 * The residencies, from every sign of which model was loaded: the polls (one model loaded, or a load under way, which
 * says the one before has gone) and each answered request (its model was loaded when its first token came).
 * A residency's edges are where it was last seen, so each is short by up to a poll's interval.
 */
export function residencies (records: TurnRecord[], observations: Observation[]): Residency[] {
  const signs: Array<{ t: number, model: number | null }> = []
  for (const o of observations) {
    if (o.loaded.length === 1 && o.loading.length === 0) signs.push({ t: o.t, model: o.loaded[0]! })
    else if (o.loaded.length === 0) signs.push({ t: o.t, model: null })
  }
  // Only the first token: a stream's end reaches the client after the server is done with it, and may be free to unload.
  for (const r of records) if (r.ok) signs.push({ t: r.firstAt, model: r.model })
  signs.sort((a, b) => a.t - b.t)
  const out: Residency[] = []
  let current: Residency | null = null
  for (const sign of signs) {
    if (current !== null && sign.model === current.model) { current.end = sign.t; continue }
    current = sign.model === null ? null : { model: sign.model, start: sign.t, end: sign.t }
    if (current !== null) out.push(current)
  }
  return out
}

/** The union of some intervals, sorted and merged. */
export function union (intervals: Interval[]): Interval[] {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0])
  const out: Interval[] = []
  for (const [a, b] of sorted) {
    const last = out.at(-1)
    if (last !== undefined && a <= last[1]) last[1] = Math.max(last[1], b)
    else out.push([a, b])
  }
  return out
}

/** Where `from` (merged) is and `cut` (merged) is not. */
export function subtract (from: Interval[], cut: Interval[]): Interval[] {
  const out: Interval[] = []
  for (const [a, b] of from) {
    let start = a
    for (const [c, d] of cut) {
      if (d <= start || c >= b) continue
      if (c > start) out.push([start, c])
      start = Math.max(start, d)
    }
    if (start < b) out.push([start, b])
  }
  return out
}

/** The length of the overlap of two merged lists. */
export function overlap (x: Interval[], y: Interval[]): number {
  let total = 0
  for (const [a, b] of x) for (const [c, d] of y) total += Math.max(0, Math.min(b, d) - Math.max(a, c))
  return total
}

/** A setup's figures for one run of the workload. */
export interface RunFigures {
  requests: number
  failed_requests: number
  /** Attempts that failed, the turns a retry saved included. */
  failed_attempts: number
  ttft_p50_ms: number
  ttft_p95_ms: number
  ttft_max_ms: number
  wall_s: number
  prompt_tokens: number
  evaluated_prompt_tokens: number
  /** Loads, the first of each model included. */
  swaps: number
  residency_p50_s: number
  /** Seconds a loaded model sat with no request of its own in flight while another model's request waited. */
  idle_while_waiting_s: number
  /** Seconds a loaded model had no request of its own in flight, whatever else waited. */
  idle_loaded_s: number
}

/** The figures of one run from its requests, its polls and when it began (0) and ended. */
export function runFigures (records: TurnRecord[], observations: Observation[]): RunFigures {
  const answered = records.filter((r) => r.ok)
  const ttft = answered.map((r) => r.firstAt - r.sentAt)
  const stays = residencies(records, observations)
  const inFlight = (model: number): Interval[] => union(records.filter((r) => r.model === model).map((r) => [r.sentAt, r.endAt]))
  // A request waits from its first send to its first token (or to its last failure).
  const waiting = (model: number): Interval[] => union(records.filter((r) => r.model !== model).map((r) => [r.sentAt, r.ok ? r.firstAt : r.endAt]))
  let idleWhileWaiting = 0
  let idleLoaded = 0
  for (const stay of stays) {
    const idle = subtract([[stay.start, stay.end]], inFlight(stay.model))
    idleLoaded += idle.reduce((sum, [a, b]) => sum + b - a, 0)
    idleWhileWaiting += overlap(idle, waiting(stay.model))
  }
  return {
    requests: records.length,
    failed_requests: records.filter((r) => !r.ok).length,
    failed_attempts: records.reduce((sum, r) => sum + r.failures, 0),
    ttft_p50_ms: Math.round(percentile(ttft, 50)),
    ttft_p95_ms: Math.round(percentile(ttft, 95)),
    ttft_max_ms: Math.round(Math.max(...ttft)),
    wall_s: round2(Math.max(...records.map((r) => r.endAt)) / 1000),
    prompt_tokens: answered.reduce((sum, r) => sum + r.promptTokens, 0),
    evaluated_prompt_tokens: answered.reduce((sum, r) => sum + r.evaluatedTokens, 0),
    swaps: stays.length,
    residency_p50_s: round2(percentile(stays.map((s) => s.end - s.start), 50) / 1000),
    idle_while_waiting_s: round2(idleWhileWaiting / 1000),
    idle_loaded_s: round2(idleLoaded / 1000),
  }
}

const round2 = (n: number): number => Math.round(n * 100) / 100
