import { copyFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { checkConfig } from '../../core/platform/config-checks.js'
import { ConfigError } from '../../core/config/config-error.js'
import { PluginLoadError } from '../../core/platform/plugin-loader.js'
import { loadConfigAndPlugins } from '../../core/platform/plugin-manifests.js'
import { checkedRuntimeKinds } from '../../core/config/runtime-kind-check.js'
import type { RuntimeKind } from '../../core/config/runtime-kinds.js'
import { kindModules } from '../../runtimes/kind-modules.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import { testConfig, tempDir } from '../helpers/app.js'
import { installPlugin, projectDir } from '../helpers/example-plugin.js'

// Runtime kinds of plugins (core/config/runtime-kinds.ts): where they rank, how a bad one fails, what the registry makes of them.

const PROBES = fileURLToPath(new URL('../fixtures/probes/', import.meta.url))
const device = (name: string) => ({ name, totalBytes: 8 * 2 ** 30, freeBytes: 6 * 2 ** 30 })

async function fakeBuild (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await copyFile(join(PROBES, 'fake-llama-server'), join(dir, 'llama-server'))
  return dir
}

/** Log lines at warn, as a logger takes them. */
function warnings (): { lines: string[], warn: (obj: unknown, message?: string) => void } {
  const lines: string[] = []
  return { lines, warn: (obj, message) => { lines.push(typeof obj === 'string' ? obj : message ?? '') } }
}

t.test('a kind ranks before the built-in it names, vulkan by default, in the plugins\' order', async (t) => {
  const kind = (name: string, before?: RuntimeKind['before']): RuntimeKind => ({ name, ...(before ? { before } : {}), detect: async () => [] })
  t.same(kindModules([kind('sycl'), kind('cann', 'cuda'), kind('musa')]).map((k) => k.backend), ['cann', 'cuda', 'rocm', 'metal', 'sycl', 'musa', 'vulkan', 'cpu'])
})

t.test('a kind that throws, answers garbage or hangs counts as absent, said once, and bounded', async (t) => {
  const log = warnings()
  const [throws, garbage, hangs] = kindModules([
    { name: 'throws', before: 'cuda', detect: () => { throw new Error('no driver') } },
    ...checkedRuntimeKinds('odd', [{ name: 'garbage', before: 'cuda', detect: async () => [{ name: 5 }] }]) as RuntimeKind[],
    { name: 'hangs', before: 'cuda', detect: () => new Promise(() => {}), binDirs: () => new Promise(() => {}) },
  ], log, 50)
  t.same(await throws!.detect({}), [])
  t.same(await throws!.detect({}), [])
  t.same(await garbage!.detect({}), [])
  const started = Date.now()
  t.same(await hangs!.detect({}), [])
  t.same(await hangs!.binDirs({}), [])
  // The bound given (50 ms) cut both; the default one (10 s each) would take 20 s: half of that divides them.
  t.ok(Date.now() - started < 10_000, `the bound cut the hangs (${Date.now() - started} ms)`)
  t.same(log.lines, [
    'runtime kind throws counts as absent: no driver',
    'runtime kind garbage counts as absent: plugin odd\'s runtime kind "garbage": detect gave something other than a list of devices ({name, totalBytes, freeBytes})',
    'runtime kind hangs counts as absent: its detect did not answer in 0.05 s',
    'runtime kind hangs counts as absent: its binDirs did not answer in 0.05 s',
  ], 'each reason once, naming the kind (and the plugin, where the manifest named it)')
})

t.test('a manifest\'s malformed kind is refused with the reason', async (t) => {
  const detect = async () => []
  for (const [value, reason] of [
    [{}, /runtimes that are not a list/],
    [[{ name: 'X', detect }], /runtime kind named "X": a name is 2-32 of a-z 0-9 _ -/],
    [[{ name: 'cuda', detect }], /runtime kind named "cuda", a built-in kind's name/],
    [[{ name: 'sycl' }], /runtime kind "sycl" without a detect function/],
    [[{ name: 'sycl', detect, before: 'tpu' }], /whose before is not one of cuda, rocm, metal, vulkan, cpu/],
    [[{ name: 'sycl', detect, flags: ['-sm', 3] }], /whose flags are not a list of strings/],
    [[{ name: 'sycl', detect, env: { 'A=B': 'x' } }], /whose env is not a map of variable names to strings/],
    [[{ name: 'sycl', detect, binDirs: ['/opt'] }], /whose binDirs is not a function/],
  ] as Array<[unknown, RegExp]>) t.match(checkedRuntimeKinds('p', value), reason)
  const [kind] = checkedRuntimeKinds('p', [{ name: 'sycl', detect, binDirs: () => ['relative/bin'] }]) as RuntimeKind[]
  await t.rejects(Promise.resolve(kind!.binDirs!({})), /plugin p's runtime kind "sycl": binDirs gave something other than a list of absolute folder paths/)
})

t.test('through config.yaml: a plugin\'s kind is named by the load error, taken by runtime and runtimes, another\'s refused', async (t) => {
  const dir = await projectDir(t)
  const plugin = (kinds: string) => `import { definePlugin } from 'llamagate/plugin'\nexport default definePlugin({ name: 'kinds', manifest: { runtimes: ${kinds} }, register: () => {} })\n`
  await installPlugin(dir, 'kinds-a', plugin("[{ name: 'sycl', detect: async () => [] }]"))
  await installPlugin(dir, 'kinds-b', plugin("[{ name: 'sycl', detect: async () => [] }]").replace("name: 'kinds'", "name: 'kinds-b'"))
  await installPlugin(dir, 'kinds-bad', plugin("[{ name: 'sycl' }]").replace("name: 'kinds'", "name: 'kinds-bad'"))
  const file = join(dir, 'config.yaml')
  const load = async (text: string) => { await writeFile(file, `data_dir: ${dir}\n${text}`); return loadConfigAndPlugins({ config: file }, {}) }

  const { config } = await load(`runtime: sycl\nruntimes: { sycl: { bin: ${dir} } }\nplugins: [{ path: kinds-a }]\n`)
  t.equal(config.runtime, 'sycl')
  t.same(config.runtimes, { sycl: { bin: dir } })
  t.same(config.runtimeKinds.map((k) => k.name), ['sycl'])
  const env = await load('plugins: [{ path: kinds-a }]\n').then(() => loadConfigAndPlugins({ config: file }, { LLAMAGATE_RUNTIME: 'sycl' }))
  t.equal(env.config.runtime, 'sycl', 'LLAMAGATE_RUNTIME too')

  const unknown = await t.rejects(load('runtime: sycl\n'))
  t.type(unknown, ConfigError)
  t.match((unknown as Error).message, /runtime = "sycl" is not allowed: must be one of "auto", "cuda", "rocm", "metal", "vulkan", "cpu"/, 'no plugin adds it')
  const misspelt = await t.rejects(load('runtimes: { sycll: { bin: /opt } }\nplugins: [{ path: kinds-a }]\n'))
  t.match((misspelt as Error).message, /runtimes\.sycll/)
  const twice = await t.rejects(load('plugins: [{ path: kinds-a }, { path: kinds-b }]\n'))
  t.type(twice, PluginLoadError)
  t.match((twice as Error).message, /plugin "kinds-b" could not be loaded: its runtime kind "sycl" is the kinds plugin's already/)
  const bad = await t.rejects(load('plugins: [{ path: kinds-bad }]\n'))
  t.match((bad as Error).message, /plugin .*kinds-bad.* could not be loaded: its manifest has a runtime kind "sycl" without a detect function/)

  // A flag the gateway sets itself (its port, its model) would break every llama-server of the kind: refused at start.
  await installPlugin(dir, 'kinds-port', plugin("[{ name: 'sycl', detect: async () => [], flags: ['--split-mode', 'none', '--port', '9'] }]"))
  const loaded = await load('plugins: [{ path: kinds-port }]\n')
  const owned = await t.rejects(checkConfig(loaded.config, loaded.manifests))
  t.type(owned, ConfigError)
  t.match((owned as Error).message, /runtime kind sycl \(a plugin's\): its flags: --port is set by the gateway/)
})

t.test('the registry finds a kind\'s build in its folders or config.yaml\'s, chooses it where its devices are, and forces it', async (t) => {
  const [own, named, cpu] = [await fakeBuild(t), await fakeBuild(t), await fakeBuild(t)]
  const sycl: RuntimeKind = { name: 'sycl', detect: async ({ env }) => env.HAS_ARC ? [device('Arc A770')] : [], binDirs: () => [own, '/nowhere/bin'], flags: ['-sm', 'none'], env: { ZES_ENABLE_SYSMAN: '1' } }
  const base = await testConfig(t, { runtimes: { cpu: { bin: cpu } } })
  const config = { ...base, runtimeKinds: [sycl] }

  const present = await RuntimeRegistry.create({ config, env: { PATH: '/usr/bin:/bin', HAS_ARC: '1' } })
  t.equal(present.chosen?.backend, 'sycl')
  t.equal(present.chosen?.binDir, own)
  t.equal(present.chosen?.source, 'plugin')
  t.same(present.rejected, [], 'a guessed folder without llama-server is passed over')
  t.match(present.reason, /1 sycl device\(s\) found/)
  t.equal(await present.freeMemory(), 6 * 2 ** 30, 'free memory is the kind\'s devices\'')
  t.same(present.launchOf(present.chosen!), { flags: ['-sm', 'none'], env: { ZES_ENABLE_SYSMAN: '1' } })
  t.same(present.launchOf(present.builds.find((b) => b.backend === 'cpu')!), { flags: [], env: {} }, 'a built-in\'s build starts as it did')

  const absent = await RuntimeRegistry.create({ config, env: { PATH: '/usr/bin:/bin' } })
  t.equal(absent.chosen?.backend, 'cpu', 'without its devices, the CPU')

  const forced = await RuntimeRegistry.create({ config: { ...config, runtime: 'sycl', runtimes: { ...config.runtimes, sycl: { bin: named } } }, env: { PATH: '/usr/bin:/bin' } })
  t.equal(forced.chosen?.binDir, named, 'config.yaml\'s folder first')
  t.equal(forced.warning, 'runtime sycl is forced but no sycl device was detected')
  const missing = await RuntimeRegistry.create({ config: { ...base, runtime: 'sycl', runtimeKinds: [{ ...sycl, binDirs: () => [] }] }, env: { PATH: '/usr/bin:/bin' } })
  t.equal(missing.reason, 'runtime sycl is forced by config but no sycl build was found; name the folder holding its llama-server as runtimes.sycl.bin in config.yaml')
  const unbuilt = await RuntimeRegistry.create({ config: { ...base, runtimeKinds: [{ ...sycl, binDirs: () => [] }] }, env: { PATH: '/usr/bin:/bin', HAS_ARC: '1' } })
  t.match(unbuilt.warning, /^sycl device found \(Arc A770\) but no sycl build: running on cpu\. To use the GPU: name the folder holding its llama-server as runtimes\.sycl\.bin in config\.yaml$/)
})
