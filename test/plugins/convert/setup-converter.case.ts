// scripts/build/setup-converter.ts: its report, and that --check and --ci install nothing they should not.
import t, { type Test } from 'tap'
import { describeReadiness, setupConverter } from '../../../scripts/build/setup-converter.js'
import { testConfig } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { skipUnlessReady } from './fixtures.js'

async function config (t: Test, values: Record<string, unknown> = {}): ReturnType<typeof testConfig> {
  const runtime = await cpuRuntime()
  return testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, ...values })
}

t.test('--check on this machine reports the interpreter, the runner and llama-quantize', async (t) => {
  const said: string[] = []
  const r = await setupConverter(await config(t), { check: true }, (l) => said.push(l))
  if (skipUnlessReady(t, r)) return // a failure where the converter is required (CI), else a skip saying why
  t.same(said, [], '--check installs nothing')
  const lines = describeReadiness(r)
  t.match(lines[0], /^conversion is ready: \S*python\S*, llama\.cpp converter at \S+/)
  if (r.shim) t.match(lines[1], /^compatibility runner in use \(plugins\/convert\/converter-shim\), standing in for: .*transformers/)
  t.match(lines.at(-1), /^llama-quantize: \S+llama-quantize$/)
})

t.test('not ready: --ci --no-apt says what to install and tries no virtual environment', async (t) => {
  const said: string[] = []
  const r = await setupConverter(await config(t, { conversion: { python: '/nonexistent/python3' } }), { ci: true, apt: false }, (l) => said.push(l))
  t.equal(r.ready, false)
  t.same(said, [], 'no venv attempt in CI mode, no apt with --no-apt')
  const lines = describeReadiness(r)
  t.match(lines[0], 'conversion is NOT ready: /nonexistent/python3: not found')
  t.match(lines[1], /^to fix: npm run setup:converter; or by hand: on Debian\/Ubuntu, apt-get install -y --no-install-recommends python3-numpy python3-torch python3-sentencepiece python3-tqdm python3-yaml/)
})
