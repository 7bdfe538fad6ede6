import { existsSync, readFileSync } from 'node:fs'
import { copyFile, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { manifest } from '../../../plugins/llama-cpp/plugin-manifest.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, testConfig, tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// A process of its own: the gateway finds nvidia-smi, nvcc and cmake on the process's PATH, which these tests set.
const PROBES = fileURLToPath(new URL('../../fixtures/probes/', import.meta.url))
const H100 = 'NVIDIA H100 80GB HBM3'

interface Fakes { pids: string, hold: string, bin: string }

/**
 * Fake nvidia-smi (an H100), nvcc (unless `nvcc: false`) and cmake first on this process's PATH, restored when the
 * test ends. The fake cmake "builds" by linking the real CPU llama-server, so the build made is one that runs.
 */
async function fakeGpuMachine (t: Test, opts: { nvcc?: boolean, fail?: boolean } = {}): Promise<Fakes> {
  const bin = await tempDir(t)
  await copyFile(join(PROBES, 'nvidia-smi-h100'), join(bin, 'nvidia-smi'))
  await copyFile(join(PROBES, 'fake-cmake-gpu'), join(bin, 'cmake'))
  if (opts.nvcc !== false) await writeFile(join(bin, 'nvcc'), '#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\n', { mode: 0o755 })
  const work = await tempDir(t)
  const fakes = { pids: join(work, 'cmake-pids'), hold: join(work, 'go-on'), bin }
  const saved = { ...process.env }
  // No /usr/local/bin: a real nvcc there (or a llama-server) must not be found; CUDA_HOME: nor one in /usr/local/cuda.
  process.env.PATH = `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`
  process.env.CUDA_HOME = work
  process.env.FAKE_CMAKE_PIDS = fakes.pids
  process.env.FAKE_CMAKE_HOLD = fakes.hold
  process.env.FAKE_REAL_BIN = (await cpuRuntime()).binDir
  if (opts.fail) process.env.FAKE_CMAKE_FAIL = 'build'
  t.teardown(() => { process.env = saved })
  return fakes
}

/** The llama.cpp source the CPU runtime was built from, so that the build needs no fetching. */
async function cpuSource (): Promise<string> {
  const info = JSON.parse(await readFile(join((await cpuRuntime()).binDir, '..', 'build-info.json'), 'utf8')) as { source: string }
  return info.source
}

/** The gateway listening, runtime auto, the real CPU build named in config, tiny models imported. */
async function gateway (t: Test, dataDir?: string): Promise<{ app: FastifyInstance, url: string }> {
  const values: Record<string, unknown> = {
    runtimes: { cpu: { bin: (await cpuRuntime()).binDir } },
    llama_cpp_src: await cpuSource(),
    build_gpu_runtime: true,
    default_options: { num_ctx: 256, num_parallel: 1, max_tokens: 4 },
  }
  if (dataDir !== undefined) values.data_dir = dataDir
  const config = await testConfig(t, values)
  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  const files = await tempDir(t)
  let seed = 1
  for (const name of ['acme/before', 'acme/after']) {
    await app.store.import(name, (await writeTinyGguf({ file: join(files, `${seed}.gguf`), seed: seed++, name })).file)
  }
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }) }
}

async function runtimes (url: string): Promise<any> {
  return (await fetch(`${url}/api/runtimes`)).json()
}

async function chat (url: string, model: string): Promise<{ status: number, content: string }> {
  const res = await fetch(`${url}/api/chat`, { method: 'POST', body: JSON.stringify({ model, stream: false, messages: [{ role: 'user', content: 'hi' }] }) })
  const body = await res.json() as { message?: { content: string } }
  return { status: res.status, content: body.message?.content ?? JSON.stringify(body) }
}

/** The program a model's llama-server was started from. */
function serverBinary (app: FastifyInstance, model: string): string {
  const pid = app.scheduler.snapshot().find((m) => m.model.name === model)?.pid
  if (!pid) throw new Error(`${model} is not loaded`)
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!
}

/** The fake cmake's `--build` call, once it has started: its pid. */
async function buildPid (fakes: Fakes): Promise<number> {
  const line = await until('the fake cmake --build to start', () => existsSync(fakes.pids) ? readFileSync(fakes.pids, 'utf8').split('\n').find((l) => / --build /.test(l)) : undefined)
  return Number(line.split(' ')[0])
}

t.test('a GPU with its toolkit and no build: built in the background while the CPU serves, then new loads use it', async (t) => {
  const fakes = await fakeGpuMachine(t)
  const cpu = await cpuRuntime()
  const { app, url } = await gateway(t)
  t.match(app.startupNotes.join('\n'), new RegExp(`^building the cuda runtime in the background for ${H100} \\(log: ${join(app.config.dataDir, 'build', 'cuda-build.log')}\\); the CPU serves until it is done$`, 'm'))
  const pid = await buildPid(fakes)
  const building = await until('progress [2/5]', async () => { const r = await runtimes(url); return r.build?.completed === 2 && r })
  t.match(building.build, { backend: 'cuda', state: 'building', completed: 2, total: 5, finished_at: null, error: null, log: join(app.config.dataDir, 'build', 'cuda-build.log') })
  t.match(building.build.step, /^\[2\/3\] building llama-server/)
  t.equal(building.chosen.backend, 'cpu', 'the CPU build serves meanwhile')
  t.match(building.warning, /^cuda device found \(NVIDIA H100 80GB HBM3\): its llama\.cpp runtime is being built in the background/)
  const nice = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16])
  t.equal(nice, 10, 'the build runs at a lower priority (nice 10)')

  // The CPU build serves a chat while the build is held.
  const before = await chat(url, 'acme/before')
  t.equal(before.status, 200, before.content)
  t.equal(serverBinary(app, 'acme/before'), cpu.serverPath)

  // doctor (another process in life; here its checks, in this one) reads the status file.
  const report = await manifest.doctor!({ config: app.config, shared: new Map() })
  const gpuLine = report.checks.find((c) => c.name === 'gpu build')
  t.match(gpuLine, { status: 'warn', message: /^cuda runtime building in the background since \S+: \[2\/3\] building llama-server.*, 2\/5 compile steps \(40%\); log: / })

  await writeFile(fakes.hold, '')
  const built = await until('the build to be installed', async () => { const r = await runtimes(url); return r.build?.state === 'built' && r }, 60_000)
  const cudaBin: string = built.chosen.binDir
  t.match(built.chosen, { backend: 'cuda', source: 'built' })
  t.ok(cudaBin.startsWith(join(app.config.dataDir, 'runtimes', 'llama.cpp-')) && cudaBin.endsWith('/cuda/bin'), `${cudaBin} is where the build script installs`)
  t.match(built.build, { state: 'built', completed: 5, total: 5, error: null })
  t.equal(built.warning, null)
  t.ok(built.build.finished_at)
  t.match(await readFile(built.build.log, 'utf8'), /\[1\/5\] Building CUDA object[\s\S]*\[5\/5\] Linking[\s\S]*installed into/, 'the whole output is in the log')
  t.same((await readdir(join(cudaBin, '..', '..'))).sort(), ['cuda'], 'no staging folder left')

  // The model loaded before keeps its CPU llama-server; the next load uses the new build.
  t.equal(serverBinary(app, 'acme/before'), cpu.serverPath)
  t.equal((await chat(url, 'acme/before')).status, 200)
  t.equal((await chat(url, 'acme/after')).status, 200)
  t.equal(serverBinary(app, 'acme/after'), join(cudaBin, 'llama-server'))
  const ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<{ name: string, runtime: string | null }> }
  t.same(Object.fromEntries(ps.models.map((m) => [m.name, m.runtime])), { 'acme/before': 'cpu', 'acme/after': 'cuda' }, '/api/ps tells each model\'s own build')
  await app.scheduler.stop('acme/before')
  t.equal((await chat(url, 'acme/before')).status, 200)
  t.equal(serverBinary(app, 'acme/before'), join(cudaBin, 'llama-server'), 'moved on its next load')
})

t.test('a failed build: the CPU keeps serving, the failure says where the log is; the next start does not retry', async (t) => {
  const fakes = await fakeGpuMachine(t, { fail: true })
  await writeFile(fakes.hold, '')
  const { app, url } = await gateway(t)
  const failed = await until('the build to fail', async () => { const r = await runtimes(url); return r.build?.state === 'failed' && r }, 60_000)
  t.match(failed.build, { backend: 'cuda', state: 'failed', completed: 2, total: 5, error: 'cmake build failed (exit code 1); its output is in the build log' })
  t.equal(failed.chosen.backend, 'cpu')
  const statusFile = join(app.config.dataDir, 'build', 'cuda-build.json')
  t.equal(failed.warning, `building the cuda runtime failed: cmake build failed (exit code 1); its output is in the build log — the CPU keeps serving. Its output: ${failed.build.log}. Not retried by itself: run npm run runtime:build -- --backend cuda to try again, or delete ${statusFile} to try again at the next start`)
  t.match(await readFile(failed.build.log, 'utf8'), /ninja: build stopped: subcommand failed/)
  t.equal((await chat(url, 'acme/before')).status, 200, 'the CPU serves')
  const doctor = await manifest.doctor!({ config: app.config, shared: new Map() })
  t.match(doctor.checks.find((c) => c.name === 'gpu build'), { status: 'fail', message: /^cuda runtime build failed: cmake build failed/, fix: 'read the log, fix the cause, then npm run runtime:build -- --backend cuda' })
  t.match(doctor.checks.find((c) => c.name === 'runtime' && c.status === 'warn')?.message, /Not retried by itself/)
  await app.close()

  const calls = readFileSync(fakes.pids, 'utf8')
  const again = await gateway(t, app.config.dataDir)
  t.match((await runtimes(again.url)).build, { state: 'failed' })
  t.equal(readFileSync(fakes.pids, 'utf8'), calls, 'cmake was not run again')
})

t.test('closing the gateway mid-build kills the build and leaves nothing half-installed', async (t) => {
  const fakes = await fakeGpuMachine(t)
  const { app, url } = await gateway(t)
  const pid = await buildPid(fakes)
  await until('progress [2/5]', async () => (await runtimes(url)).build?.completed === 2)
  t.ok(isAlive(pid))
  await app.close()
  t.notOk(isAlive(pid), `the fake cmake ${pid} is gone`)
  const record = JSON.parse(await readFile(join(app.config.dataDir, 'build', 'cuda-build.json'), 'utf8'))
  t.match(record, { state: 'interrupted', error: 'stopped with the gateway' })
  const runtimesDir = join(app.config.dataDir, 'runtimes')
  const installed = existsSync(runtimesDir) ? (await readdir(runtimesDir, { recursive: true })).map(String) : []
  t.same(installed.filter((p) => p.includes('cuda')), [], 'no cuda folder, staged or not')
})

t.test('a GPU without its toolkit: no build, the warning with the fix in /api/runtimes', async (t) => {
  const fakes = await fakeGpuMachine(t, { nvcc: false })
  const { app, url } = await gateway(t)
  const body = await runtimes(url)
  t.equal(body.build, null)
  t.match(body.warning, /^NVIDIA GPU found \(NVIDIA H100 80GB HBM3\) but no CUDA toolkit \(nvcc\) to build llama\.cpp for it: running on CPU\. To use the GPU: install the CUDA toolkit/)
  t.notOk(app.startupNotes.some((n) => /building the cuda runtime/.test(n)))
  t.notOk(existsSync(fakes.pids), 'cmake never ran')
})
