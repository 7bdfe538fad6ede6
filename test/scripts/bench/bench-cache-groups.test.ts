import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// The cache-groups bench end to end on a small load (four gateways, one after the other), so that a change
// that breaks a run or the report is caught here. The counts are checked for what must hold whatever the load: a key
// alone gets the same hits with keys on as off (the runs are deterministic).
t.test('npm run bench --scenario cache-groups, small: every run in the report; a key alone loses nothing to keys on', async (t) => {
  const dir = await tempDir(t)
  const out = join(dir, 'bench.json')
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nruntimes:\n  cpu: { bin: ${(await cpuRuntime()).binDir} }\n`)
  const { code, output } = await runBench(['--scenario', 'cache-groups', '--threads', '1', '--conversations', '3', '--upstream-turns', '2',
    '--words', '30', '--system-words', '60', '--reply', '4', '--out', out], config)
  t.equal(code, 0, output.slice(-2000))
  t.match(output, /keys on cost A alone 0 of its cached share; beside B, two groups instead of one cost A -?\d/)
  const report = JSON.parse(await readFile(out, 'utf8')).cache_groups
  for (const run of ['keys off', 'A alone, keys on', 'A and B, two groups', 'A and B, one group']) {
    const a = report.runs[run].a
    t.ok(a.requests === 6 && a.prompt > 0 && a.cached <= a.prompt, `${run}: A ${a.cached} of ${a.prompt}`)
  }
  t.same(report.runs['A alone, keys on'].a, report.runs['keys off'].a, 'keys on, alone: the same hits, token for token')
  t.ok(report.runs['A and B, two groups'].b.requests === 6, 'B ran beside A')
  t.equal(report.single_key_cost, 0)
})
