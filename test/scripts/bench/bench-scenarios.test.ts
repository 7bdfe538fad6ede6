import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'
import { runtimeSource } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// The real-size scenarios on the test-sized Llama 3 shape (llama.cpp's own llama-bpe vocabulary and Llama 3.2
// template, quantized by the real llama-quantize): every setup answers every switch, prompt and turn, and
// every figure the tables quote is in the report.
t.test('npm run bench, the swap, long-prompt, multi-turn and swap-cache scenarios end to end on a test-sized shape', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  const config = join(dir, 'config.yaml')
  // The runtime's own source tree: the shapes' vocabulary and template come from it, as on a user's machine.
  await writeFile(config, `data_dir: ${dir}\nllama_cpp_src: ${(await runtimeSource()).source}\nruntimes:\n  cpu: { bin: ${(await cpuRuntime()).binDir} }\n`)
  const args = ['--scenario', 'swap,long-prompt,multi-turn,swap-cache', '--prefix-words', '900', '--swap-ins', '1', '--shape', 'llama-tiny', '--prompt-tokens', '200,400', '--reps', '1', '--switches', '2',
    '--conversations', '2', '--turns', '3', '--words', '20', '--reply', '4', '--threads', '1', '--out', out]
  const { code, output } = await runBench(args, config)
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

  // swap-cache: after the model came back, only llamagate with its caches takes the shared prefix from a cache.
  const swapCache = report.swap_cache_llama_tiny
  t.same(swapCache.llama_server_args, ['--flash-attn', 'off', '--no-repack'], 'flash attention and repacking off unless asked, in every setup')
  t.match(output, /caches \/ the best of the others: \d+\.\d{4} \(target ≤ 0\.1\); after a gateway restart: \d+\.\d{4}/)
  for (const setup of ['caches', 'no-caches', 'router', 'restart']) t.equal(swapCache[setup].follow_up_ttft_ms.length, 1, `${setup}: its swap-in timed`)
  t.ok(swapCache.caches.follow_up_cached_p50 > swapCache.caches.prompt_tokens_p50 * 0.8, `caches: ${swapCache.caches.follow_up_cached_p50} of ${swapCache.caches.prompt_tokens_p50} prompt tokens restored`)
  for (const setup of ['no-caches', 'router', 'restart']) t.equal(swapCache[setup].follow_up_cached_p50, 0, `${setup}: the prefix evaluated again`)
  t.ok(swapCache.after_restart[0].cached > swapCache.caches.prompt_tokens_p50 * 0.8, `after a gateway restart: ${swapCache.after_restart[0].cached} tokens restored`)
  t.equal(swapCache.identical_answers, swapCache.answers_compared, 'the same answers at temperature 0 with and without the restore')
  t.match(output, /identical to every cold setup's \(no-caches, router, restart\): 1 of 1; largest logprob difference: top-1 \d\.\d\de[+-]\d+, runner-up \d\.\d\de[+-]\d+ \(\d+ compared\)/)
  // Each follow-up's tokens against each of the three cold setups': the runner-ups were there to compare.
  const logprobs = swapCache.caches_logprobs[0] as Array<[number, number | null]>
  t.ok(swapCache.runner_ups_compared > 0 && swapCache.runner_ups_compared <= 3 * logprobs.length, `${swapCache.runner_ups_compared} runner-ups compared`)
  t.ok(logprobs.length > 0 && logprobs.every(([top, runnerUp]) => top <= 0 && (runnerUp === null || runnerUp <= top)), 'logprobs as a distribution gives them')
  t.ok(swapCache.max_top1_logprob_diff <= 1e-2, `top-1 logprobs within 1e-2 of the cold runs' (${swapCache.max_top1_logprob_diff})`)
})
