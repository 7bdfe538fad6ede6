import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { RuntimeRegistry, choose } from '../../runtimes/registry.js'
import { cuda, parseNvidiaSmi } from '../../runtimes/cuda.js'
import { parseRocmSmi, rocm } from '../../runtimes/rocm.js'
import type { Backend, RuntimeBuild } from '../../runtimes/types.js'
import { parseVulkaninfo } from '../../runtimes/vulkan.js'
import { inspectBuild } from '../../runtimes/inspect-build.js'
import { testConfig, tempDir } from '../helpers/app.js'

const PROBES = fileURLToPath(new URL('../fixtures/probes/', import.meta.url))

/** A folder on PATH whose nvidia-smi is one of the fixtures (or none). */
async function probePath (t: Test, nvidiaSmi: string | null): Promise<string> {
  const dir = await tempDir(t)
  if (nvidiaSmi) await copyFile(join(PROBES, nvidiaSmi), join(dir, 'nvidia-smi'))
  return `${dir}:/usr/bin:/bin`
}

/** A folder holding a fake llama-server that claims a backend. */
async function fakeBuild (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await copyFile(join(PROBES, 'fake-llama-server'), join(dir, 'llama-server'))
  return dir
}

t.test('nvidia-smi CSV is read into devices with bytes', async (t) => {
  const devices = parseNvidiaSmi('0, NVIDIA GeForce RTX 4090, 24564, 23012\n1, NVIDIA A100-SXM4-80GB, 81920, 80000\ngarbage line\n')
  t.same(devices.map((d) => [d.index, d.name, d.totalBytes / 2 ** 20, d.freeBytes / 2 ** 20]), [[0, 'NVIDIA GeForce RTX 4090', 24564, 23012], [1, 'NVIDIA A100-SXM4-80GB', 81920, 80000]])
})

t.test('a probe that fails or hangs means "no GPU", quickly and without a crash', async (t) => {
  t.same(await cuda.detect({ PATH: await probePath(t, 'nvidia-smi-broken') }), [])
  const started = Date.now()
  t.same(await cuda.detect({ PATH: await probePath(t, 'nvidia-smi-hangs') }), [])
  // The probe sleeps 60 s and is given 3 s: 20 s tells one from the other on a loaded machine too.
  t.ok(Date.now() - started < 20_000, `the hanging probe was given up on (${Date.now() - started} ms)`)
  t.same(await cuda.detect({ PATH: await probePath(t, null) }), [], 'a missing probe')
  t.equal((await cuda.detect({ PATH: await probePath(t, 'nvidia-smi-two-gpus') })).length, 2)
})

t.test('with an NVIDIA GPU and a CUDA build, CUDA is chosen, and says why', async (t) => {
  const [cudaBin, cpuBin] = [await fakeBuild(t), await fakeBuild(t)]
  const config = await testConfig(t, { runtimes: { cuda: { bin: cudaBin }, cpu: { bin: cpuBin } } })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, 'nvidia-smi-two-gpus') } })
  t.equal(registry.chosen?.backend, 'cuda')
  t.equal(registry.chosen?.binDir, cudaBin)
  t.equal(registry.chosen?.version, '9.9.9-fake')
  t.equal(registry.chosen?.commit, 'f00ba47')
  t.same(registry.chosen?.features, { jinja: true, flashAttn: true, noWebui: true, fit: true, noWarmup: true, rpc: false, cacheSalt: false, slotCheckpoints: false, cachedPromptSaves: false, loadGate: false })
  t.match(registry.reason, /2 cuda device\(s\) found/)
  t.equal(registry.warning, null)
  t.match(registry.summary(), /^runtime: cuda \(llama\.cpp 9\.9\.9-fake f00ba47, config/)
  t.equal(registry.devices.filter((d) => d.backend === 'cuda').length, 2)
  t.equal(await registry.freeMemory(), (23012 + 1024) * 2 ** 20, 'free memory is the GPUs\' free memory')
})

t.test('a GPU host without a GPU build falls back to CPU with a warning', async (t) => {
  const config = await testConfig(t, { runtimes: { cpu: { bin: await fakeBuild(t) } } })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, 'nvidia-smi-two-gpus') } })
  t.equal(registry.chosen?.backend, 'cpu')
  t.match(registry.reason, /no build for the GPU found \(cuda/)
  t.match(registry.warning, /cuda device found \(NVIDIA GeForce RTX 4090\) but no cuda build.*npm run runtime:build -- --backend cuda/)
})

t.test('without a GPU the CPU build is chosen; runtime can be forced', async (t) => {
  const [cudaBin, cpuBin] = [await fakeBuild(t), await fakeBuild(t)]
  const config = await testConfig(t, { runtimes: { cuda: { bin: cudaBin }, cpu: { bin: cpuBin } } })
  const noGpu = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, 'nvidia-smi-broken') } })
  t.equal(noGpu.chosen?.backend, 'cpu')
  t.match(noGpu.reason, /no GPU found/)
  const forced = await RuntimeRegistry.create({ config: { ...config, runtime: 'cpu' }, env: { PATH: await probePath(t, 'nvidia-smi-two-gpus') } })
  t.equal(forced.chosen?.backend, 'cpu')
  t.match(forced.reason, /forced by config/)
  const forcedMissing = await RuntimeRegistry.create({ config: { ...config, runtime: 'rocm' }, env: { PATH: await probePath(t, null) } })
  t.equal(forcedMissing.chosen, null)
  t.match(forcedMissing.reason, /runtime rocm is forced by config but no rocm build was found; build one with "npm run runtime:build/)
})

t.test('a build is checked by running it: one that does not run is set aside with the reason', async (t) => {
  const broken = await tempDir(t)
  await writeFile(join(broken, 'llama-server'), '#!/bin/sh\necho "libcuda.so.1: cannot open shared object file" >&2\nexit 127\n', { mode: 0o755 })
  const empty = await tempDir(t)
  const config = await testConfig(t, { runtimes: { cuda: { bin: broken }, cpu: { bin: empty } } })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, null) } })
  t.equal(registry.chosen, null)
  t.match(registry.rejected.map((r) => r.error).join('\n'), /--version failed \(exit 127\): libcuda\.so\.1: cannot open shared object file/)
  t.match(registry.rejected.map((r) => r.error).join('\n'), /llama-server does not exist/)
  t.match(registry.reason, /no llama\.cpp build found/)
})

t.test('llama-server on PATH is found, and its backend read from --list-devices', async (t) => {
  const dir = await fakeBuild(t)
  await mkdir(join(dir, 'x'), { recursive: true })
  const config = await testConfig(t)
  const registry = await RuntimeRegistry.create({ config, env: { PATH: `${dir}:/usr/bin:/bin`, FAKE_DEVICE: 'Vulkan' } })
  t.equal(registry.builds[0]?.source, 'path')
  t.equal(registry.builds[0]?.backend, 'vulkan')
})

t.test('AMD: rocm-smi\'s JSON gives the GPU and its memory; rocminfo alone still finds the GPU', async (t) => {
  const dir = await tempDir(t)
  await copyFile(join(PROBES, 'rocm-smi-one-gpu'), join(dir, 'rocm-smi'))
  t.same(await rocm.detect({ PATH: `${dir}:/usr/bin:/bin` }), [{ backend: 'rocm', index: 0, name: 'Radeon RX 7900 XTX', totalBytes: 25753026560, freeBytes: 25753026560 - 3221225472 }])
  const infoOnly = await tempDir(t)
  await copyFile(join(PROBES, 'rocminfo-one-gpu'), join(infoOnly, 'rocminfo'))
  t.same(await rocm.detect({ PATH: `${infoOnly}:/usr/bin:/bin` }), [{ backend: 'rocm', index: 0, name: 'Radeon RX 7900 XTX', totalBytes: 0, freeBytes: 0 }], 'the CPU agent is not a GPU')
  t.same(parseRocmSmi('not json'), [])
  t.same(parseRocmSmi('{"system": {"Driver version": "6.8"}}'), [], 'keys other than cardN are not GPUs')
})

t.test('ROCm is preferred over Vulkan, Vulkan over CPU; software Vulkan is no GPU', async (t) => {
  t.same(parseVulkaninfo('GPU0:\n\tdeviceName = AMD Radeon RX 7900 XTX (RADV NAVI31)\nGPU1:\n\tdeviceName = llvmpipe (LLVM 15.0.6, 256 bits)\n').map((d) => d.name), ['AMD Radeon RX 7900 XTX (RADV NAVI31)'])
  const devices = [
    { backend: 'cpu' as const, index: 0, name: 'cpu', totalBytes: 1, freeBytes: 1 },
    { backend: 'vulkan' as const, index: 0, name: 'AMD Radeon', totalBytes: 0, freeBytes: 0 },
    { backend: 'rocm' as const, index: 0, name: 'AMD Radeon', totalBytes: 8, freeBytes: 8 },
  ]
  const build = (backend: Backend): RuntimeBuild => ({ backend, binDir: `/x/${backend}`, serverPath: `/x/${backend}/llama-server`, quantizePath: null, rpcServerPath: null, version: '1', commit: null, source: 'built', features: { jinja: true, flashAttn: true, noWebui: true, fit: true, noWarmup: true, rpc: false, cacheSalt: false, slotCheckpoints: false, cachedPromptSaves: false, loadGate: false } })
  t.equal(choose('auto', devices, [build('cpu'), build('vulkan'), build('rocm')]).chosen?.backend, 'rocm')
  const noRocm = choose('auto', devices, [build('cpu'), build('vulkan')])
  t.equal(noRocm.chosen?.backend, 'vulkan')
  t.match(noRocm.warning, /rocm device found \(AMD Radeon\) but no rocm build: running on vulkan/)
  t.equal(choose('auto', devices.slice(0, 1), [build('cpu'), build('vulkan')]).chosen?.backend, 'cpu', 'a Vulkan build without a Vulkan device is not chosen')
})

t.test('built runtimes: the newest llama.cpp first, by version number; staging folders are ignored', async (t) => {
  const config = await testConfig(t)
  for (const version of ['llama.cpp-v0.9.0', 'llama.cpp-v0.10.0', 'llama.cpp-v0.5.0']) {
    const bin = join(config.dataDir, 'runtimes', version, 'cpu', 'bin')
    await mkdir(bin, { recursive: true })
    await copyFile(join(PROBES, 'fake-llama-server'), join(bin, 'llama-server'))
  }
  // A build interrupted before its rename.
  await mkdir(join(config.dataDir, 'runtimes', 'llama.cpp-v0.10.0', 'cpu.tmp-123', 'bin'), { recursive: true })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, null) } })
  t.same(registry.builds.map((b) => b.binDir.split('/').slice(-3, -2)[0]), ['llama.cpp-v0.10.0', 'llama.cpp-v0.9.0', 'llama.cpp-v0.5.0'])
  t.equal(registry.chosen?.binDir, join(config.dataDir, 'runtimes', 'llama.cpp-v0.10.0', 'cpu', 'bin'))
  t.equal(registry.summary(), 'runtime: cpu (llama.cpp 9.9.9-fake f00ba47, built) — no GPU found')
})

t.test('describe() is the /api/runtimes body: setting, choice, reason, warning, quantize, devices, builds, rejected', async (t) => {
  const cpuBin = await fakeBuild(t)
  await writeFile(join(cpuBin, 'llama-quantize'), '#!/bin/sh\n', { mode: 0o755 })
  const config = await testConfig(t, { runtimes: { cpu: { bin: cpuBin }, rocm: { bin: await tempDir(t) } } })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, 'nvidia-smi-two-gpus') } })
  const body = registry.describe()
  t.same(Object.keys(body), ['runtime', 'chosen', 'reason', 'warning', 'quantize', 'rpc', 'devices', 'builds', 'rejected', 'build'])
  t.equal(body.build, null)
  t.equal(body.runtime, 'auto')
  t.same(body.rpc, { available: false, serverPath: null }, 'a build without --rpc cannot split models across workers')
  t.equal(body.chosen?.backend, 'cpu')
  t.match(body.warning, /cuda device found/)
  t.same(body.quantize, { available: true, path: join(cpuBin, 'llama-quantize') })
  t.same(body.devices.map((d) => d.backend), ['cuda', 'cuda', 'cpu'])
  t.equal(body.rejected.length, 1, 'the empty rocm folder')
  t.match(registry.summary(), /^runtime: cpu \(llama\.cpp 9\.9\.9-fake f00ba47, config\) — no build for the GPU found \(cuda\)$/)
})

t.test('features are read from --help: a flag counts, a longer flag that starts with it does not', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'llama-server'), [
    '#!/bin/sh',
    'case "$1" in',
    '  --version) echo "version: 1.2.3 (build 9, commit abc1234)"; exit 0 ;;',
    '  --help) echo "--no-webui-mcp-proxy   experimental"; echo "-fitt, --fit-target MiB"; echo "--jinja, --no-jinja"; exit 0 ;;',
    'esac',
  ].join('\n') + '\n', { mode: 0o755 })
  const build = await inspectBuild(dir, 'config', 'cpu')
  if ('error' in build) throw new Error(build.error)
  t.same(build.features, { jinja: true, flashAttn: false, noWebui: false, fit: false, noWarmup: false, rpc: false, cacheSalt: false, slotCheckpoints: false, cachedPromptSaves: false, loadGate: false })
  t.equal(build.version, '1.2.3')
  t.equal(build.commit, 'abc1234')
  t.equal(build.quantizePath, null, 'no llama-quantize beside it')
  t.equal(build.rpcServerPath, null, 'nor an RPC worker')
})

t.test('refresh() finds a build made since the start and chooses it; the devices stay those found at start', async (t) => {
  const config = await testConfig(t, { runtimes: { cpu: { bin: await fakeBuild(t) } } })
  const registry = await RuntimeRegistry.create({ config, env: { PATH: await probePath(t, 'nvidia-smi-two-gpus') } })
  t.equal(registry.chosen?.backend, 'cpu')
  t.match(registry.warning, /cuda device found/)
  const bin = join(config.dataDir, 'runtimes', 'llama.cpp-v0.5.0', 'cuda', 'bin')
  await mkdir(bin, { recursive: true })
  await copyFile(join(PROBES, 'fake-llama-server'), join(bin, 'llama-server'))
  await registry.refresh()
  t.equal(registry.chosen?.backend, 'cuda')
  t.equal(registry.chosen?.binDir, bin)
  t.equal(registry.warning, null)
  t.match(registry.reason, /2 cuda device\(s\) found/)
  t.same(registry.builds.map((b) => b.backend), ['cpu', 'cuda'])
})
