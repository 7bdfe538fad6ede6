// doctor's `patches` line (plugins/llama-cpp/doctor-checks.ts): what a llama-server without llamagate's patch set costs;
// and the start's warning line saying the same.
import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runtimeChecks } from '../../../plugins/llama-cpp/doctor-checks.js'
import type { RuntimesDescription } from '../../../runtimes/registry.js'
import type { RuntimeBuild, RuntimeFeatures } from '../../../runtimes/types.js'
import { tempDir } from '../../helpers/app.js'
import { startServe } from '../../helpers/serve-process.js'

// Answers --version and --help as a llama-server of no patch set would.
const FAKE_SERVER = fileURLToPath(new URL('../../fixtures/probes/fake-llama-server', import.meta.url))

function describe (features: Partial<RuntimeFeatures>): RuntimesDescription {
  const chosen: RuntimeBuild = {
    backend: 'cpu', binDir: '/x/bin', serverPath: '/x/bin/llama-server', quantizePath: null, rpcServerPath: null, version: '1', commit: null, source: 'config',
    features: { jinja: true, flashAttn: true, noWebui: true, fit: true, noWarmup: true, rpc: false, cacheSalt: true, slotCheckpoints: true, cachedPromptSaves: true, loadGate: true, ...features },
  }
  return { devices: [], builds: [chosen], rejected: [], chosen, reason: 'the only one', warning: null, build: null } as unknown as RuntimesDescription
}

const patches = (features: Partial<RuntimeFeatures>) => runtimeChecks(describe(features), { runtimes: {}, configFile: null } as never).find((c) => c.name === 'patches')

t.test('a build with the whole patch set: ok', async (t) => {
  t.match(patches({}), { status: 'ok', message: /patch set: cache groups, slot saves with context checkpoints, saves of the RAM prompt cache/ })
})

t.test('a build without them: a warning naming each cost, and how to get them', async (t) => {
  const check = patches({ slotCheckpoints: false, cachedPromptSaves: false })
  t.match(check, { status: 'warn' })
  t.match(JSON.stringify(check), /hybrid and sliding-window models .* do not survive a swap or a restart/)
  t.match(JSON.stringify(check), /only the conversations still in a slot are saved/)
  t.notMatch(JSON.stringify(check), /cache groups reuse no prompt/, 'what it has is not named')
  t.match(JSON.stringify(patches({ cacheSalt: false })), /different cache groups reuse no prompt at all/)
  t.match(JSON.stringify(check), /npm run runtime:build.*runtimes\/build\/patches/)
})

t.test('serve with a llama-server lacking the patch set: one warning line at start, what it costs and what to do', async (t) => {
  const dir = await tempDir(t)
  const bin = join(dir, 'bin')
  await mkdir(bin)
  await copyFile(FAKE_SERVER, join(bin, 'llama-server'))
  const config = join(dir, 'config.yaml')
  await writeFile(config, JSON.stringify({ data_dir: join(dir, 'data'), port: 0, log_level: 'info', runtime: 'cpu', runtimes: { cpu: { bin } } }))
  const serve = await startServe(['--config', config], { LLAMAGATE_HOME: dir })
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const warnings = serve.output().split('\n').filter((line) => line.includes('lacks llamagate\'s patches'))
  t.equal(warnings.length, 1, `one line: ${warnings.join('\n')}`)
  t.match(warnings[0], /"level":40\b/, 'at warn level')
  t.match(warnings[0], `WARNING: the llama-server in ${bin} lacks llamagate's patches: API keys in different cache groups reuse no prompt at all (no cache_salt); `)
  t.match(warnings[0], /To have them: let llamagate build its runtime \(npm run runtime:build\), or apply runtimes\/build\/patches\/\*\.patch/)
})
