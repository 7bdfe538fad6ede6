import { spawn } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/paths.js'
import { tempDir } from '../helpers/app.js'
import { childEnv } from '../helpers/child-env.js'
import { runtimeSource } from '../helpers/realistic-models.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The benchmark is how issue #9's targets are measured: this runs it end to end on the smallest load (the
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
  const bench = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/bench.js'), '--concurrency', '1', '--reps', '1', '--tokens', '8', '--cold', '1', '--threads', '1', '--out', out], { env: childEnv({ LLAMAGATE_CONFIG: config }), stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  bench.stdout.on('data', (d) => { output += d })
  bench.stderr.on('data', (d) => { output += d })
  const code = await new Promise<number | null>((resolve) => bench.once('close', resolve))
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
  t.ok(report.tags_1000.p50_ms > 0)
  t.same((await stat(committed)).mtimeMs, before.mtimeMs, 'the committed figures were not overwritten')
})

// The real-size scenarios on the test-sized Llama 3 shape (llama.cpp's own llama-bpe vocabulary and Llama 3.2
// template, quantized by the real llama-quantize): every setup answers every switch, prompt and turn, and
// every figure the tables quote is in the report.
t.test('npm run bench, the swap, long-prompt and multi-turn scenarios end to end on a test-sized shape', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  const config = join(dir, 'config.yaml')
  // The runtime's own source tree: the shapes' vocabulary and template come from it, as on a user's machine.
  await writeFile(config, `data_dir: ${dir}\nllama_cpp_src: ${(await runtimeSource()).source}\nruntimes:\n  cpu: { bin: ${(await cpuRuntime()).binDir} }\n`)
  const args = ['--scenario', 'swap,long-prompt,multi-turn', '--shape', 'llama-tiny', '--prompt-tokens', '200,400', '--reps', '1', '--switches', '2',
    '--conversations', '2', '--turns', '3', '--words', '20', '--reply', '4', '--threads', '1', '--out', out]
  const bench = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/bench.js'), ...args], { env: childEnv({ LLAMAGATE_CONFIG: config }), stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  bench.stdout.on('data', (d) => { output += d })
  bench.stderr.on('data', (d) => { output += d })
  const code = await new Promise<number | null>((resolve) => bench.once('close', resolve))
  t.equal(code, 0, output.slice(-2000))
  t.match(output, /llamagate\/router switch: \d+\.\d{3}/)
  t.match(output, /added TTFT -?\d+\.\d ms, of which outside the model -?\d+\.\d+ ms \(target ≤ 2\)/)
  t.match(output, /llamagate\/direct follow-up TTFT: \d+\.\d{3}/)
  t.ok((await stat(join(dir, 'bench', 'llama-tiny-q4_k_m.gguf'))).size > 0, 'the shape was made and kept under the data folder')

  const report = JSON.parse(await readFile(out, 'utf8'))
  for (const setup of ['llamagate', 'router', 'restart']) {
    t.equal(report.swap[setup].switch_ms.length, 2, `${setup}: every switch timed`)
    t.ok(report.swap[setup].switch_ttft_sum_ms > 2 * report.swap[setup].loaded_ttft_p50_ms, `${setup}: a switch takes longer than an answer from the loaded model`)
  }
  t.same(report.swap.models, ['llama-tiny-q4_k_m', 'llama-tiny-q8_0'])
  t.equal(report.swap.llamagate_phases.unload_ms.length, 2, 'every switch\'s unload found in llamagate\'s log')
  t.equal(report.swap.llamagate_phases.load_ms.length, 2, 'and every load after it')
  t.same(report.long_prompt.sizes.map((s: { size: number }) => s.size), [200, 400])
  for (const size of report.long_prompt.sizes) {
    for (const setup of ['direct', 'router', 'llamagate']) {
      // The prompt's words are about a token each: the size asked for, give or take the template.
      t.ok(Math.abs(size[setup].prompt_tokens - size.size) < size.size * 0.25, `${size.size}: ${setup} sent ${size[setup].prompt_tokens} prompt tokens`)
      t.ok(size[setup].prompt_tps > 0)
    }
  }
  const turns = report.multi_turn.per_turn as Array<{ setup: string, turn: number, promptTokens: number, cachedTokens: number }>
  t.equal(turns.length, 3 * 2 * 3, 'three setups, two conversations, three turns')
  for (const turn of turns.filter((x) => x.turn > 0)) {
    t.ok(turn.cachedTokens > 0 && turn.cachedTokens < turn.promptTokens, `${turn.setup}, turn ${turn.turn + 1}: its conversation's prefix came from the cache (${turn.cachedTokens} of ${turn.promptTokens})`)
  }
  t.equal(report.multi_turn.follow_ups, 4)
  t.ok(report.multi_turn.follow_up_ttft_ratio_vs_direct > 0)
})
