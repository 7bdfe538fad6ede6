import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import { cuda, parseNvidiaSmi } from '../../runtimes/cuda.js'
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
  t.ok(Date.now() - started < 6000, 'the hanging probe was given up on')
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
  t.same(registry.chosen?.features, { jinja: true, flashAttn: true, noWebui: true, fit: true })
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
