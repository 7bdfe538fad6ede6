import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// The upstreams bench (cached prompt tokens by routing, the front's added time to first token) end to end on a small
// load: two back llamagates, two fronts, both layouts, so that a change that breaks a setup or the report is caught
// here rather than on the day of a measurement. Figures are checked for being there, not for their size.
t.test('npm run bench --scenario upstreams, small: every figure of both routings and both layouts is in the report', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nruntimes:\n  cpu: { bin: ${(await cpuRuntime()).binDir} }\n`)
  const committed = join(PACKAGE_ROOT, 'docs/benchmarks-realistic.json')
  const before = await stat(committed)
  const { code, output } = await runBench(['--scenario', 'upstreams', '--threads', '1', '--conversations', '2', '--upstream-turns', '2',
    '--ttft-rounds', '2', '--ttft-warmup', '1', '--words', '30', '--reply', '4', '--out', out], config)
  t.equal(code, 0, output.slice(-2000))
  t.match(output, /cached share of prompt tokens: prefix \d\.\d{3}, round robin \d\.\d{3}, ratio/)

  const report = JSON.parse(await readFile(out, 'utf8')).upstreams
  t.equal(report.ttft_warmup_bursts, 1)
  for (const mode of ['prefix', 'round_robin']) {
    const cached = report.cached[mode]
    t.ok(cached.prompt_tokens > 0 && cached.cached_tokens <= cached.prompt_tokens, `${mode}: ${cached.cached_tokens} of ${cached.prompt_tokens} prompt tokens from a back's cache`)
  }
  t.ok(report.cached.prefix.follow_up_cached_share_p50 > 0, 'a follow-up routed by its conversation finds it in the back\'s cache')
  for (const layout of ['shared_cores', 'front_on_its_own_core']) {
    for (const level of ['streams_1', 'streams_8']) {
      const row = report.ttft[layout][level]
      t.ok(row.direct_p50_ms > 0 && row.front_p50_ms > 0 && Number.isFinite(row.added_p50_ms), `${layout}, ${level}: direct ${row.direct_p50_ms} ms, front ${row.front_p50_ms} ms`)
    }
    t.ok(report.front_cpu_ms_per_stream[layout] > 0, `${layout}: the front's CPU per stream, ${report.front_cpu_ms_per_stream[layout]} ms`)
  }
  t.equal((await stat(committed)).mtimeMs, before.mtimeMs, 'docs/benchmarks-realistic.json is left alone with --out')
})
