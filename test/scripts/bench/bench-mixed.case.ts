import { readdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ensureMixedModels } from '../../../scripts/bench/bench-mixed-models.js'
import { runFigures, type Observation } from '../../../scripts/bench/bench-mixed-timeline.js'
import { planWorkload, thinkFloorMs, type TurnRecord } from '../../../scripts/bench/bench-mixed-workload.js'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'
import { runtimeSource } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

const record = (model: number, sentAt: number, firstAt: number, endAt: number): TurnRecord => ({
  user: model, model, turn: 0, sentAt, firstAt, endAt, ok: true, failures: 0, errors: [], promptTokens: 100, cachedTokens: 0, evaluatedTokens: 100,
})

// Model 0 answers from 1 s to 2 s, then sits loaded until 6 s while model 1's request (sent at 1.5 s) waits; model 1
// loads and answers at 7 s. Idle while another waited: 2 s to 6 s; idle with nobody waiting: 7.5 s to 8 s.
t.test('the mixed scenario reads loads and idle-while-waiting from the timeline', async (t) => {
  const records = [record(0, 0, 1000, 2000), record(1, 1500, 7000, 7500)]
  const observations: Observation[] = [
    { t: 3000, loaded: [0], loading: [] }, { t: 6000, loaded: [0], loading: [] }, { t: 6500, loaded: [], loading: [1] }, { t: 7200, loaded: [1], loading: [] }, { t: 8000, loaded: [1], loading: [] },
  ]
  const f = runFigures(records, observations)
  t.equal(f.swaps, 2)
  t.equal(f.idle_while_waiting_s, 4)
  t.equal(f.idle_loaded_s, 4.5, 'and model 1 idle after its answer, until the last poll, with nobody waiting')
  t.equal(f.ttft_p50_ms, 1000)
  t.equal(f.ttft_max_ms, 5500)
  t.equal(f.evaluated_prompt_tokens, 200)
  t.equal(f.wall_s, 7.5)
})

t.test('the mixed workload is the same for a seed, and another for another', async (t) => {
  const o = { users: 6, models: 3, turns: 3, seed: 1, systemWords: 50, messageWords: 10, thinkMs: [100, 900] as [number, number] }
  t.same(planWorkload(o), planWorkload(o))
  t.not(JSON.stringify(planWorkload(o)), JSON.stringify(planWorkload({ ...o, seed: 2 })))
  t.same(new Set(planWorkload(o).slice(0, 3).map((p) => p.model)), new Set([0, 1, 2]), 'every model has a user')
})

t.test("the mixed workload's think floor is the most any one user thinks in all", async (t) => {
  const plans = planWorkload({ users: 4, models: 2, turns: 3, seed: 3, systemWords: 10, messageWords: 5, thinkMs: [100, 900] })
  const totals = plans.map((p) => p.thinkMs.reduce((a, b) => a + b, 0))
  t.equal(thinkFloorMs(plans), Math.max(...totals))
  t.ok(totals.some((x) => x < thinkFloorMs(plans)), 'the busiest, not any user')
  t.equal(thinkFloorMs([]), 0)
})

// End to end on the tiny fixtures, at the smallest settings: both setups answer every turn, and every figure is there.
t.test('npm run bench -- --scenario mixed on the tiny fixtures', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  const config = join(dir, 'config.yaml')
  const build = await cpuRuntime()
  const { source } = await runtimeSource()
  // The bench's tiny shapes, made once per machine and kept beside the test fixtures.
  const benchDir = join(process.env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'test-fixtures', 'bench-shapes')
  await ensureMixedModels({ shape: 'tiny', build, llamaCppSrc: source, benchDir, say: () => {} })
  await symlink(benchDir, join(dir, 'bench'))
  await writeFile(config, `data_dir: ${dir}\nllama_cpp_src: ${source}\nruntimes:\n  cpu: { bin: ${build.binDir} }\n`)
  const logs = join(dir, 'logs')
  const { code, output } = await runBench(['--scenario', 'mixed', '--users', '2', '--turns', '1', '--think', '0,0.1', '--reply', '4', '--threads', '1', '--keep-logs', logs, '--out', out], config)
  t.equal(code, 0, output.slice(-2000))
  t.match(output, /llamagate \/ router: wall \d+\.\d{3}, p50 \d+\.\d{3}, p95 \d+\.\d{3}/)
  t.match(output, /the busiest user's think times alone: 0\.\d s, 0\.\d{3} of router mode's wall/)
  // The kept log is llamagate's own: both models' loads are in it.
  const kept = await readdir(logs)
  t.same(kept, ['seed-1-round-0-llamagate.log'])
  const log = await readFile(join(logs, kept[0]!), 'utf8')
  t.equal(log.match(/"msg":"model loaded"/g)?.length, 2, 'both models loaded, in the log kept')
  const mixed = JSON.parse(await readFile(out, 'utf8')).mixed_tiny
  t.ok(mixed.seeds[0].think_floor_s >= 0 && mixed.seeds[0].think_floor_s <= 0.1, `think floor ${mixed.seeds[0].think_floor_s} s`)
  t.same(mixed.setups, ['router', 'llamagate'])
  for (const setup of mixed.setups) {
    const m = mixed.seeds[0].medians[setup]
    t.equal(m.requests, 2, `${setup}: every turn sent`)
    t.equal(m.failed_requests, 0, `${setup}: and answered`)
    t.ok(m.ttft_p50_ms > 0 && m.ttft_p50_ms <= m.ttft_p95_ms && m.ttft_p95_ms <= m.ttft_max_ms, `${setup}: first tokens ${m.ttft_p50_ms} ≤ ${m.ttft_p95_ms} ≤ ${m.ttft_max_ms} ms`)
    t.ok(m.wall_s * 1000 >= m.ttft_max_ms, `${setup}: wall time ${m.wall_s} s`)
    t.ok(m.evaluated_prompt_tokens > 1500 && m.evaluated_prompt_tokens <= m.prompt_tokens, `${setup}: ${m.evaluated_prompt_tokens} of ${m.prompt_tokens} prompt tokens evaluated`)
    t.ok(m.swaps >= 2, `${setup}: both models loaded (${m.swaps} loads)`)
    t.ok(m.idle_while_waiting_s >= 0 && m.idle_while_waiting_s <= m.wall_s, `${setup}: idle while waiting ${m.idle_while_waiting_s} s`)
  }
  t.type(mixed.ratios_vs_router.llamagate.wall_s, 'number')
})
