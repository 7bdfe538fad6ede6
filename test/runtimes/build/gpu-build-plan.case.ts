import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { BUILD_RECIPE } from '../../../runtimes/build/build-runtime.js'
import { buildStatusPath, parseProgress, readBuildRecord, writeBuildRecord, type GpuBuildRecord } from '../../../runtimes/build/build-status.js'
import { planGpuBuild } from '../../../runtimes/build/gpu-build-plan.js'
import { RuntimeRegistry } from '../../../runtimes/registry.js'
import { testConfig, tempDir } from '../../helpers/app.js'

const PROBES = fileURLToPath(new URL('../../fixtures/probes/', import.meta.url))
const H100 = 'NVIDIA H100 80GB HBM3'

/**
 * An environment whose PATH holds a fake nvidia-smi (or none) and a fake nvcc (or none), and whose CUDA_HOME is an
 * empty folder, so that a toolkit installed on the machine running the tests is not found.
 */
async function gpuEnv (t: Test, opts: { smi: string | null, nvcc: boolean }): Promise<NodeJS.ProcessEnv> {
  const bin = await tempDir(t)
  if (opts.smi) await copyFile(join(PROBES, opts.smi), join(bin, 'nvidia-smi'))
  if (opts.nvcc) await writeFile(join(bin, 'nvcc'), '#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\n', { mode: 0o755 })
  return { PATH: `${bin}:/usr/bin:/bin`, CUDA_HOME: await tempDir(t) }
}

/** The plan for a config and an environment, from what a real registry finds there. */
async function plan (t: Test, values: Record<string, unknown>, env: NodeJS.ProcessEnv) {
  const config = await testConfig(t, { build_gpu_runtime: true, ...values })
  const registry = await RuntimeRegistry.create({ config, env })
  return { config, plan: await planGpuBuild({ config, devices: registry.devices, builds: registry.builds, env }) }
}

async function cpuBuild (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await copyFile(join(PROBES, 'fake-llama-server'), join(dir, 'llama-server'))
  return dir
}

t.test('an NVIDIA GPU with nvcc and no CUDA build: build it, with nvcc named to CMake', async (t) => {
  const env = await gpuEnv(t, { smi: 'nvidia-smi-h100', nvcc: true })
  const { plan: decided } = await plan(t, { runtimes: { cpu: { bin: await cpuBuild(t) } } }, env)
  if (decided.action !== 'build') throw new Error(`expected a build, got ${JSON.stringify(decided)}`)
  t.equal(decided.backend, 'cuda')
  t.equal(decided.device.name, H100)
  t.equal(decided.toolkit.compiler, join(env.PATH!.split(':')[0]!, 'nvcc'))
  t.equal(decided.toolkit.env.CUDACXX, decided.toolkit.compiler)
  t.equal(decided.previous, null)
})

t.test('nvcc off PATH, in CUDA_HOME: found, and its folder put first on the build\'s PATH', async (t) => {
  const env = await gpuEnv(t, { smi: 'nvidia-smi-h100', nvcc: false })
  await mkdir(join(env.CUDA_HOME!, 'bin'))
  await writeFile(join(env.CUDA_HOME!, 'bin', 'nvcc'), '#!/bin/sh\n', { mode: 0o755 })
  const { plan: decided } = await plan(t, {}, env)
  if (decided.action !== 'build') throw new Error(`expected a build, got ${JSON.stringify(decided)}`)
  t.equal(decided.toolkit.compiler, join(env.CUDA_HOME!, 'bin', 'nvcc'))
  t.equal(decided.toolkit.env.PATH, `${join(env.CUDA_HOME!, 'bin')}:${env.PATH}`)
  t.equal(decided.toolkit.env.CUDACXX, join(env.CUDA_HOME!, 'bin', 'nvcc'))
})

t.test('a GPU without nvcc: no build, one line with the fix', async (t) => {
  const { plan: decided } = await plan(t, {}, await gpuEnv(t, { smi: 'nvidia-smi-h100', nvcc: false }))
  t.same(decided, {
    action: 'no-toolkit', backend: 'cuda', device: decided.action === 'no-toolkit' ? decided.device : null,
    warning: `NVIDIA GPU found (${H100}) but no CUDA toolkit (nvcc) to build llama.cpp for it: running on CPU. To use the GPU: install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads, or apt-get install nvidia-cuda-toolkit), then restart llamagate (it builds in the background), or run npm run runtime:build -- --backend cuda`,
  })
})

t.test('nothing to build: no GPU, a CUDA build already there, build_gpu_runtime false, CPU forced', async (t) => {
  const noGpu = await plan(t, {}, await gpuEnv(t, { smi: null, nvcc: true }))
  t.same(noGpu.plan, { action: 'none', why: 'no CUDA or ROCm device found' })
  const gpu = await gpuEnv(t, { smi: 'nvidia-smi-h100', nvcc: true })
  const built = await plan(t, { runtimes: { cuda: { bin: await cpuBuild(t) } } }, gpu)
  t.same(built.plan, { action: 'none', why: 'a cuda build is there' })
  t.same((await plan(t, { build_gpu_runtime: false }, gpu)).plan, { action: 'none', why: 'build_gpu_runtime is false' })
  t.same((await plan(t, { runtime: 'cpu' }, gpu)).plan, { action: 'none', why: 'runtime cpu is forced by config' })
  const forcedCuda = await plan(t, { runtime: 'cuda' }, gpu)
  t.equal(forcedCuda.plan.action, 'build', 'runtime: cuda with no CUDA build yet: built, like auto')
})

t.test('a build that failed with this recipe is not tried again by itself; one interrupted is', async (t) => {
  const env = await gpuEnv(t, { smi: 'nvidia-smi-h100', nvcc: true })
  const config = await testConfig(t, { build_gpu_runtime: true })
  await mkdir(join(config.dataDir, 'build'))
  const record: GpuBuildRecord = {
    backend: 'cuda', state: 'failed', step: '[2/3] building', completed: 2, total: 5, started_at: '2025-01-01T00:00:00.000Z',
    finished_at: '2025-01-01T00:01:00.000Z', error: 'cmake build failed (exit code 1)', log: '/x/cuda-build.log', pid: 1, recipe: BUILD_RECIPE,
  }
  writeBuildRecord(config.dataDir, record)
  const registry = await RuntimeRegistry.create({ config, env })
  const failed = await planGpuBuild({ config, devices: registry.devices, builds: registry.builds, env })
  if (failed.action !== 'failed-before') throw new Error(`expected failed-before, got ${failed.action}`)
  t.equal(failed.warning, `building the cuda runtime for ${H100} failed on 2025-01-01T00:01:00.000Z (cmake build failed (exit code 1); log: /x/cuda-build.log): running on CPU. Not retried by itself: run npm run runtime:build -- --backend cuda to try again now, or delete ${buildStatusPath(config.dataDir, 'cuda')} to try again at the next start`)
  writeBuildRecord(config.dataDir, { ...record, recipe: BUILD_RECIPE - 1 })
  t.equal((await planGpuBuild({ config, devices: registry.devices, builds: registry.builds, env })).action, 'build', 'a new recipe tries again')
  // A pid no process has: the build's process died without saying so.
  writeBuildRecord(config.dataDir, { ...record, state: 'building', pid: 2 ** 22 + 1 })
  t.equal(readBuildRecord(config.dataDir, 'cuda')?.state, 'interrupted')
  const resumed = await planGpuBuild({ config, devices: registry.devices, builds: registry.builds, env })
  t.equal(resumed.action, 'build')
  t.equal(resumed.action === 'build' ? resumed.previous?.state : null, 'interrupted')
})

t.test('progress is read from ninja\'s [n/m] and make\'s [ n%] lines only', async (t) => {
  t.same(parseProgress('[12/345] Building CXX object src/llama.cpp.o'), { completed: 12, total: 345 })
  t.same(parseProgress('[ 45%] Building CXX object src/llama.cpp.o'), { completed: 45, total: 100 })
  t.equal(parseProgress('-- Configuring done'), null)
  t.equal(parseProgress('warning: [1/2] is not progress here'), null)
})
