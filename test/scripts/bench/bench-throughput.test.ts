import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// The benchmark is how the gateway's throughput targets are measured: this runs it end to end on the smallest load (the
// real llama-server direct, its router mode, the bare relay in front of it and a real `llamagate serve`), so
// that a change that breaks one of the setups, the cold starts or the report is caught here and not on the day
// of a measurement.
t.test('npm run bench, smallest load: all four setups answer, every figure is there, and --out is honoured', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  // The benchmark finds its llama-server through the config (LLAMAGATE_CONFIG): the tests' runtime, whatever
  // the caller's environment or ~/.llamagate hold.
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nruntimes:\n  cpu: { bin: ${(await cpuRuntime()).binDir} }\n`)
  const committed = join(PACKAGE_ROOT, 'docs/benchmarks.json')
  const before = await stat(committed)
  const { code, output } = await runBench(['--concurrency', '1', '--reps', '1', '--tokens', '8', '--cold', '1', '--threads', '1', '--tags-models', '100', '--out', out], config)
  t.equal(code, 0, output.slice(-2000))
  t.match(output, /llamagate\/direct \d+\.\d{3}\s+llamagate\/router \d+\.\d{3}\s+llamagate\/pipe \d+\.\d{3}\s+pipe\/direct \d+\.\d{3}/, 'the ratios are printed')
  t.match(output, /cold start \(unloaded → first token, median of 1, in turns\): llamagate \d+\.\d ms, router \d+\.\d ms/)

  const report = JSON.parse(await readFile(out, 'utf8'))
  t.equal(report.backend, 'cpu')
  t.equal(report.throughput.max_tokens, 8)
  t.equal(report.settings.threads, 1, 'llama-server on one thread in every setup')
  const [tiny] = report.throughput.models
  t.equal(tiny.model, 'tiny')
  const [row] = tiny.summary
  t.equal(row.concurrency, 1)
  for (const setup of ['direct', 'router', 'pipe', 'llamagate']) {
    t.equal(row[setup].failed, 0, `${setup}: no request failed`)
    t.ok(row[setup].aggregate_tps > 0, `${setup}: tokens counted from the usage the server reported`)
    t.ok(row[setup].ttft_p50_ms > 0, `${setup}: a first token was seen`)
  }
  for (const ratio of [row.ratio_vs_direct, row.ratio_vs_router, row.ratio_vs_pipe, row.pipe_vs_direct]) t.ok(Number.isFinite(ratio) && ratio > 0)
  t.ok(row.gateway_cpu_us_per_token > 0, 'the gateway\'s CPU was read from /proc')
  // The relay spends a few ms on this load, under the 10 ms resolution of /proc: present, not necessarily > 0.
  t.ok(Number.isFinite(row.pipe_cpu_us_per_token) && row.pipe_cpu_us_per_token >= 0, 'and the pipe\'s')
  t.ok(tiny.cold_start.llamagate_ms > 0 && tiny.cold_start.router_ms > 0, 'both cold starts measured')
  t.equal(tiny.cold_start.samples, 1)
  t.ok(tiny.gateway_peak_rss_mib > 0)
  // /api/tags timed on a list of 100 models (1,000 unless asked): the figures are there whatever the list's size.
  t.ok(report.tags_100.p50_ms > 0 && report.tags_100.models === 100, 'the /api/tags figures, on the list asked for')
  t.same((await stat(committed)).mtimeMs, before.mtimeMs, 'the committed figures were not overwritten')
})
