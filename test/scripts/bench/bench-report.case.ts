import t from 'tap'
import { mergeReport } from '../../../scripts/bench/bench-report.js'

// A bench run of some scenarios into docs/benchmarks-realistic.json keeps the header that dates the file's other
// sections, and its own sections carry their own date, llama.cpp and settings.
const earlier = { date: '2026-11-01T00:00:00.000Z', llama_cpp: '0.4 aaa', settings: { threads: 1 }, machine: { cpus: 2 }, swap: { switch_ms: [1] } }
const run = { date: '2026-11-26T18:00:00.000Z', llama_cpp: '0.5 de3ff81', settings: { threads: 2 }, machine: { cpus: 2 }, swap_cache_gemma3_1b: { ratio_vs_best_other: 0.05 }, note: 'x' }

t.test('a run of some scenarios stamps its sections and leaves the header', async (t) => {
  const merged = mergeReport(earlier, run, false)
  t.equal(merged.date, earlier.date, 'the header still dates the sections written before')
  t.same(merged.settings, { threads: 1 })
  t.same(merged.swap, { switch_ms: [1] }, 'earlier sections kept as they were')
  t.same(merged.swap_cache_gemma3_1b, { date: run.date, llama_cpp: run.llama_cpp, settings: { threads: 2 }, ratio_vs_best_other: 0.05 })
  t.equal(merged.note, 'x', 'a value that is not a section is written as it is')
})

t.test('a run of every scenario, or into an empty file, writes the header', async (t) => {
  t.same(mergeReport(earlier, run, true), { ...earlier, ...run })
  t.same(mergeReport({}, run, false), run)
})
