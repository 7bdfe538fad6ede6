// doctor's `patches` line (plugins/llama-cpp/doctor-checks.ts): what a llama-server without llamagate's patch set costs.
import t from 'tap'
import { runtimeChecks } from '../../../plugins/llama-cpp/doctor-checks.js'
import type { RuntimesDescription } from '../../../runtimes/registry.js'
import type { RuntimeBuild, RuntimeFeatures } from '../../../runtimes/types.js'

function describe (features: Partial<RuntimeFeatures>): RuntimesDescription {
  const chosen: RuntimeBuild = {
    backend: 'cpu', binDir: '/x/bin', serverPath: '/x/bin/llama-server', quantizePath: null, rpcServerPath: null, version: '1', commit: null, source: 'config',
    features: { jinja: true, flashAttn: true, noWebui: true, fit: true, noWarmup: true, rpc: false, cacheSalt: true, slotCheckpoints: true, cachedPromptSaves: true, ...features },
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
