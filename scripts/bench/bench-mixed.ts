import type { ChildProcess } from 'node:child_process'
import { copyFile, mkdir, readFile, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Pool } from 'undici'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { streamTurn } from './bench-mixed-client.js'
import type { MixedModel } from './bench-mixed-models.js'
import { medianFigures, printSeed, ratios, ratiosOverSeeds, ROUTER } from './bench-mixed-report.js'
import { runFigures, watchResidency, type RunFigures } from './bench-mixed-timeline.js'
import { planWorkload, runUsers, thinkFloorMs, type TurnRecord, type UserPlan } from './bench-mixed-workload.js'
import { killAll, routerModelsDir, startGateway, startRouter, type ServerShape } from './bench-setups.js'

/**
 * The mixed scenario: a team's agents on one box. Several users, each on one of three models of three
 * architectures (hybrid, sliding window, plain), room for one model at a time, each with a long system prompt and a
 * conversation that grows by a message and a fixed-length answer a turn, with think times between turns
 * (bench-mixed-workload.ts). The same seeded workload runs against llama-server's router mode (`--models-max 1`)
 * and llamagate (`max_loaded_models: 1`, and any variants of its `limits`), one setup at a time, each started
 * fresh for its run, in an order that turns round by round. Per setup: first token p50/p95/max, wall time, the
 * prompt tokens llama-server evaluated, loads, and the seconds a loaded model sat idle while another model's
 * requests waited (bench-mixed-timeline.ts).
 */

export interface MixedOptions {
  build: RuntimeBuild
  models: MixedModel[]
  dir: string
  /** The models' shape, for the report. */
  shape: string
  users: number
  turns: number
  seeds: number[]
  rounds: number
  /** A user's think time before each turn, uniformly in this range (ms). */
  thinkMs: [number, number]
  /** Tokens of every answer, forced (ignore_eos). */
  reply: number
  systemWords: number
  messageWords: number
  threads?: number
  /** Where each llamagate run's log is copied before its folder goes (`<seed-round>-<setup>.log`), for reading its loads. */
  keepLogs?: string
  /** llamagate's setups: more of its `limits` for each ('' for its defaults). */
  gatewayLimits: string[]
  say: (line: string) => void
}

const POLL_MS = 100

/** The name a setup's results go under: llamagate with its defaults, or with the limits it was given. */
export function gatewaySetupName (limits: string): string {
  return limits === '' ? 'llamagate' : `llamagate (${limits})`
}

export async function benchMixed (o: MixedOptions): Promise<Record<string, unknown>> {
  const setups = [ROUTER, ...o.gatewayLimits.map(gatewaySetupName)]
  const plansBySeed = new Map(o.seeds.map((seed) => [seed, planWorkload({
    users: o.users, models: o.models.length, turns: o.turns, seed, systemWords: o.systemWords, messageWords: o.messageWords, thinkMs: o.thinkMs,
  })]))
  // Room for a whole conversation in a slot (the vocabularies take more than a token for some words), a slot for
  // every user of the busiest model.
  const tokens = (o.systemWords + o.turns * (o.messageWords + o.reply + 32)) * 1.5
  const parallel = Math.max(1, ...[...plansBySeed.values()].flatMap((plans) => o.models.map((_, m) => plans.filter((p) => p.model === m).length)))
  const shape: ServerShape = { ctxPerSlot: Math.ceil(tokens / 512) * 512, parallel, ...(o.threads !== undefined ? { threads: o.threads } : {}) }
  // Read once before any setup, so that none pays for the disk.
  for (const m of o.models) await readFile(m.file)
  const routerDir = await routerModelsDir(join(o.dir, 'router-models'), Object.fromEntries(o.models.map((m) => [m.label, m.file])))

  const perSeed: Array<Record<string, unknown>> = []
  const seedRatios: Array<Record<string, Record<string, number | null>>> = []
  for (const seed of o.seeds) {
    const plans = plansBySeed.get(seed)!
    o.say(`\nseed ${seed}: ${o.users} users (${o.models.map((m, i) => `${m.label}: ${plans.filter((p) => p.model === i).length}`).join(', ')}), ${o.turns} turns each`)
    const figures: Record<string, RunFigures[]> = Object.fromEntries(setups.map((s) => [s, []]))
    const timelines: Record<string, TurnRecord[][]> = Object.fromEntries(setups.map((s) => [s, []]))
    for (let round = 0; round < o.rounds; round++) {
      const order = setups.map((_, i) => setups[(i + round) % setups.length]!)
      for (const setup of order) {
        const run = await runSetup(o, setup, plans, shape, routerDir, join(o.dir, `seed-${seed}-round-${round}`))
        figures[setup]!.push(run.figures)
        timelines[setup]!.push(run.records)
        const f = run.figures
        o.say(`  round ${round + 1}, ${setup}: p50 ${f.ttft_p50_ms} ms, p95 ${f.ttft_p95_ms} ms, wall ${f.wall_s} s, evaluated ${f.evaluated_prompt_tokens} of ${f.prompt_tokens} tokens, ${f.swaps} loads, idle while waiting ${f.idle_while_waiting_s} s, failed ${f.failed_requests}`)
      }
    }
    const medians = Object.fromEntries(setups.map((s) => [s, medianFigures(figures[s]!)]))
    printSeed(o.say, seed, o.rounds, medians)
    const thinkFloorS = thinkFloorMs(plans) / 1000
    const floorRatio = Math.round(thinkFloorS / medians[ROUTER]!.wall_s * 1000) / 1000
    o.say(`the busiest user's think times alone: ${thinkFloorS.toFixed(1)} s, ${floorRatio.toFixed(3)} of router mode's wall: no setup's wall is below it`)
    const r = ratios(medians)
    seedRatios.push(r)
    perSeed.push({
      seed, users: plans.map((p) => ({ user: p.user, model: o.models[p.model]!.label, think_ms: p.thinkMs })),
      think_floor_s: thinkFloorS, think_floor_vs_router_wall: floorRatio,
      medians, ratios_vs_router: r, rounds: figures,
      // Each request as the client saw it, for reading a run's timeline again: ms from the run's start.
      requests: Object.fromEntries(setups.map((s) => [s, timelines[s]!.map((records) => records.map((x) => [x.user, x.turn, Math.round(x.sentAt), Math.round(x.firstAt), Math.round(x.endAt), x.evaluatedTokens, x.ok ? 1 : 0]))])),
    })
  }
  const overall = ratiosOverSeeds(seedRatios)
  if (o.seeds.length > 1) {
    for (const [setup, r] of Object.entries(overall)) o.say(`${setup} / router, median over ${o.seeds.length} seeds: wall ${r.wall_s}, p95 first token ${r.ttft_p95_ms}, evaluated tokens ${r.evaluated_prompt_tokens}`)
  }
  return {
    shape: o.shape, models: o.models.map((m) => ({ label: m.label, kind: m.kind })), users: o.users, turns: o.turns, rounds: o.rounds,
    think_ms: o.thinkMs, reply_tokens: o.reply, system_words: o.systemWords, message_words: o.messageWords,
    ctx_per_slot: shape.ctxPerSlot, parallel: shape.parallel, poll_ms: POLL_MS, setups,
    requests_columns: ['user', 'turn', 'sent_ms', 'first_token_ms', 'end_ms', 'evaluated_tokens', 'ok'],
    ratios_vs_router: overall, seeds: perSeed,
  }
}

/** One run of the workload against a setup started fresh for it (nothing loaded, no caches), stopped after. */
async function runSetup (o: MixedOptions, setup: string, plans: UserPlan[], shape: ServerShape, routerDir: string, dir: string): Promise<{ figures: RunFigures, records: TurnRecord[] }> {
  const gatewayName = (m: MixedModel): string => `bench/${m.label}`
  let child: ChildProcess | null = null
  let pool: Pool | null = null
  const setupDir = join(dir, setup.replace(/[^a-z0-9]+/gi, '-'))
  try {
    let url: string
    let modelName: (m: MixedModel) => string
    if (setup === ROUTER) {
      const router = await startRouter(o.build, routerDir, shape, 1)
      child = router.child
      url = router.url
      modelName = (m) => m.label
    } else {
      const limits = o.gatewayLimits.find((l) => gatewaySetupName(l) === setup)!
      // Only the models some user asks for: each import is a CLI process of its own.
      const used = o.models.filter((_, i) => plans.some((p) => p.model === i))
      const gateway = await startGateway(setupDir, o.build, Object.fromEntries(used.map((m) => [gatewayName(m), m.file])), shape, { maxLoaded: 1, limits })
      child = gateway.child
      url = gateway.url
      modelName = gatewayName
    }
    pool = new Pool(url, { connections: o.users })
    const started = performance.now()
    const now = (): number => performance.now() - started
    const names = o.models.map(modelName)
    // llamagate's /api/ps may name a model with its tag.
    const indexOf = (name: string): number | undefined => { const i = names.findIndex((n) => name === n || name === `${n}:latest`); return i < 0 ? undefined : i }
    const watch = watchResidency(url, setup === ROUTER ? 'router' : 'llamagate', indexOf, now, POLL_MS)
    const records = await runUsers(plans, (model, messages) => streamTurn(pool!, {
      model: names[model], messages, max_tokens: o.reply, temperature: 0, ignore_eos: true,
    }, now), now)
    const observations = await watch.stop()
    return { figures: runFigures(records, observations), records }
  } finally {
    await pool?.close()
    if (child !== null) {
      const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child!.once('exit', resolve))
      killAll([child])
      await exited
    }
    if (o.keepLogs !== undefined && setup !== ROUTER) {
      await mkdir(o.keepLogs, { recursive: true })
      await copyFile(join(setupDir, 'llamagate.log'), join(o.keepLogs, `${basename(dir)}-${basename(setupDir)}.log`)).catch((err: Error) => o.say(`  (log not kept: ${err.message})`))
    }
    await rm(setupDir, { recursive: true, force: true })
  }
}
