import { cpus } from 'node:os'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa, type ResultPromise } from 'execa'
import type { BuiltinRuntime } from '../../core/config/runtime-kinds.js'
import { outputLines } from '../process/output-lines.js'
import { killGroup } from '../process/kill-group.js'
import { runProbe } from '../probe.js'
import { builtRuntimesDir } from '../registry.js'
import { applyPatches, patchFiles, patchSetDigest } from './llama-cpp-patches.js'
import { findOrFetchSource, type Say } from './llama-cpp-source.js'

/** llama.cpp's RPC worker (`rpc-server` in older releases) is built and installed beside llama-server. */
export const RPC_SERVER = 'ggml-rpc-server'
const TARGETS = ['llama-server', 'llama-quantize', RPC_SERVER]

/**
 * The version of the build recipe (the flags below). A built runtime with an older recipe is rebuilt by
 * ensure-runtime: 3 builds for AVX2 instead of -march=native, after quantized models crashed in VMs (AMX);
 * 4 adds the RPC backend (`--rpc` in llama-server, and the worker binary); 5 applies llamagate's patch set
 * (runtimes/build/patches: the per-request cache_salt); 6 adds slot saves that carry context checkpoints, saves
 * of the RAM prompt cache, and the prompt's common prefix in GET /slots. A changed patch set needs a new recipe.
 */
export const BUILD_RECIPE = 6

/**
 * x86-64: not `-march=native`. A native build on a CPU that advertises Intel AMX compiles AMX kernels for
 * quantized matrices (the GGML_AMX_* switches do not stop it: -march=native defines the macros), and inside
 * VMs that do not grant the tile state — measured here, firecracker on a Sapphire Rapids Xeon — every
 * quantized model crashed with SIGSEGV in ggml_backend_amx_mul_mat. AVX2/FMA/F16C runs on any x86-64 of the
 * last decade, so a cached build also survives a move to another machine of the same kind.
 */
function cpuFlags (): string[] {
  if (process.arch !== 'x64') return []
  return ['-DGGML_NATIVE=OFF', '-DGGML_AVX=ON', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_F16C=ON', '-DGGML_BMI2=ON']
}

/**
 * The CUDA architectures to build for: the ones asked for, else the compute capability of each GPU present
 * (`nvidia-smi --query-gpu=compute_cap` says `9.0` for an H100: `90`). One architecture builds in minutes;
 * llama.cpp's portable list takes hours. Exported for tests.
 */
export async function cudaArchitectures (asked: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<string[] | 'portable'> {
  if (asked === 'portable') return 'portable'
  if (asked) {
    const archs = asked.split(/[,;]/).map((a) => a.trim()).filter(Boolean)
    const bad = archs.find((a) => !/^\d{2,3}[af]?(-real|-virtual)?$/.test(a))
    if (bad !== undefined || archs.length === 0) throw new Error(`--cuda-arch ${JSON.stringify(asked)} is not a list of CUDA architectures such as 90 or 86;89 (or "portable")`)
    return archs
  }
  const out = await runProbe('nvidia-smi', ['--query-gpu=compute_cap', '--format=csv,noheader'], env, 10_000)
  const caps = [...new Set((out ?? '').split('\n').map((c) => c.trim()).filter((c) => /^\d+\.\d+$/.test(c)).map((c) => c.replace('.', '')))]
  if (caps.length === 0) {
    throw new Error('no NVIDIA GPU answered nvidia-smi, so there is no compute capability to build for: pass --cuda-arch <e.g. 90 for H100, 89 for RTX 40xx, 86 for RTX 30xx>, or --cuda-arch portable for llama.cpp\'s full list (hours)')
  }
  return caps
}

/** CMake options per backend; CUDA is limited to the GPU at hand so that it builds in minutes, not hours. */
async function backendFlags (backend: BuiltinRuntime, cudaArch: string | undefined, say: Say, env: NodeJS.ProcessEnv): Promise<string[]> {
  switch (backend) {
    case 'cpu': return []
    case 'cuda': {
      const archs = await cudaArchitectures(cudaArch, env)
      // Without a GPU at build time, llama.cpp's "native" default fails: portable means GGML_NATIVE off.
      if (archs === 'portable') { say('CUDA: building llama.cpp\'s portable architecture list (slow)'); return ['-DGGML_CUDA=ON', '-DGGML_NATIVE=OFF'] }
      say(`CUDA: building for compute capability ${archs.join(', ')}`)
      return ['-DGGML_CUDA=ON', `-DCMAKE_CUDA_ARCHITECTURES=${archs.join(';')}`]
    }
    case 'rocm': return ['-DGGML_HIP=ON']
    case 'metal': return ['-DGGML_METAL=ON']
    case 'vulkan': return ['-DGGML_VULKAN=ON']
  }
}

export interface BuildRuntimeOptions {
  /** Only the built-in kinds are built here; a plugin's kind brings its own build. */
  backend: BuiltinRuntime
  /** llamagate's data folder: the source is kept under `src/`, the build under `build/`, the result under `runtimes/`. */
  dataDir: string
  /** A llama.cpp checkout to build instead of the pinned release. @default null */
  source: string | null
  /** Parallel compile jobs. @default the number of CPU cores */
  jobs?: number
  /** CUDA only: architectures (`90`, `86;89`) or `portable`. @default the compute capability of each GPU present */
  cudaArch?: string
  /** Where progress lines go. @default stdout, prefixed `[runtime:build]` */
  say?: Say
  /** Where cmake's and the compilers' output lines go. @default the terminal (inherited stdout and stderr) */
  onOutput?: (line: string) => void
  /** Run cmake and its compilers under `nice`, so that a server on the same cores stays responsive. @default false */
  lowPriority?: boolean
  /** Stops the build: its whole process group is killed and nothing is installed. */
  signal?: AbortSignal
  /** The environment cmake, the compilers and nvidia-smi run with (PATH finds them). @default process.env */
  env?: NodeJS.ProcessEnv
  /** The patches applied to the pinned source (not to a `source` of the user's). @default llamagate's patch set */
  patches?: string[]
}

/**
 * Builds llama-server and llama-quantize for a backend and installs them under
 * `<dataDir>/runtimes/llama.cpp-<tag>/<backend>/bin`, atomically: the binaries are staged beside the target
 * and renamed into place only when complete, so that a half-finished build is never found. The CMake build
 * folder is kept under `<dataDir>/build`, so that a second run only rebuilds what changed.
 * @returns the installed bin folder
 */
export async function buildRuntime (opts: BuildRuntimeOptions): Promise<string> {
  const started = Date.now()
  const elapsed = (): string => `${Math.round((Date.now() - started) / 1000)} s`
  const say = opts.say ?? ((line: string) => process.stdout.write(`[runtime:build] ${line}\n`))
  const env = opts.env ?? process.env
  const { dir: src, tag } = await findOrFetchSource(opts.dataDir, opts.source, say)
  // A source the user named is built as it is; the gateway reads what it supports from the binary.
  const patchPaths = opts.source === null ? opts.patches ?? await patchFiles() : []
  const patches = opts.source === null ? await applyPatches(src, patchPaths) : []
  const patchesDigest = opts.source === null ? await patchSetDigest(patchPaths) : null
  if (patches.length > 0) say(`patched llama.cpp with ${patches.join(', ')}`)
  const install = join(builtRuntimesDir(opts.dataDir), `llama.cpp-${tag}`, opts.backend)
  const buildDir = join(opts.dataDir, 'build', `${tag}-${opts.backend}`)
  const generator = (await execa('ninja', ['--version'], { reject: false, env, extendEnv: false })).exitCode === 0 ? ['-G', 'Ninja'] : []
  const configure = ['-S', src, '-B', buildDir, ...generator, '-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF',
    '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DBUILD_SHARED_LIBS=OFF', '-DGGML_RPC=ON',
    ...cpuFlags(),
    ...await backendFlags(opts.backend, opts.cudaArch, say, env)]
  say(`[1/3] configuring ${opts.backend} from ${src}: cmake ${configure.join(' ')}`)
  await step('cmake configure', configure, opts)
  const jobs = String(opts.jobs ?? cpus().length)
  say(`[2/3] building ${TARGETS.join(', ')} with ${jobs} jobs after ${elapsed()} (the CPU build takes about 6 minutes on 2 cores)`)
  await step('cmake build', ['--build', buildDir, '--target', ...TARGETS, '-j', jobs], opts)
  opts.signal?.throwIfAborted()
  say(`[3/3] installing after ${elapsed()}`)
  const staging = `${install}.tmp-${process.pid}`
  try {
    await rm(staging, { recursive: true, force: true })
    await mkdir(join(staging, 'bin'), { recursive: true })
    for (const target of TARGETS) await copyFile(join(buildDir, 'bin', target), join(staging, 'bin', target))
    const commit = await execa('git', ['-C', src, 'rev-parse', 'HEAD'], { reject: false })
    await writeFile(join(staging, 'build-info.json'), JSON.stringify({ recipe: BUILD_RECIPE, tag, backend: opts.backend, commit: commit.stdout.trim() || null, source: src, patches, patches_digest: patchesDigest, flags: configure, built_at: new Date().toISOString() }, null, 2))
    opts.signal?.throwIfAborted()
  } catch (err) {
    // A stopped or failed install leaves nothing half-made beside the builds.
    await rm(staging, { recursive: true, force: true })
    throw err
  }
  // Replace an older build with two renames, so that the folder is missing for microseconds at most.
  const old = `${install}.old-${process.pid}`
  if (existsSync(install)) await rename(install, old)
  await rename(staging, install)
  await rm(old, { recursive: true, force: true })
  say(`installed into ${install} in ${elapsed()}`)
  return join(install, 'bin')
}

/**
 * Runs one cmake step and waits for it; a failed one names itself and its exit status. With a signal it runs in a
 * process group of its own, so that stopping it stops ninja and every compiler under it too.
 */
async function step (name: string, args: string[], opts: BuildRuntimeOptions): Promise<void> {
  opts.signal?.throwIfAborted()
  const [command, commandArgs] = opts.lowPriority === true ? ['nice', ['-n', '10', 'cmake', ...args]] : ['cmake', args]
  const lines = opts.onOutput ? outputLines(opts.onOutput) : null
  const child: ResultPromise = execa(command, commandArgs, {
    reject: false, env: opts.env ?? process.env, extendEnv: false, stdin: 'ignore', detached: opts.signal !== undefined,
    ...(lines ? { stdout: 'pipe', stderr: 'pipe', buffer: false } : { stdout: 'inherit', stderr: 'inherit' }),
  })
  if (lines) {
    child.stdout?.setEncoding('utf8').on('data', lines.push)
    child.stderr?.setEncoding('utf8').on('data', lines.push)
  }
  const stop = (): void => killGroup(child, 'SIGKILL')
  opts.signal?.addEventListener('abort', stop, { once: true })
  try {
    const result = await child
    lines?.flush()
    opts.signal?.throwIfAborted()
    if (result.exitCode !== 0) {
      const where = lines ? 'its output is in the build log' : 'its output is above'
      throw new Error(`${name} failed (${result.exitCode === undefined ? result.shortMessage : `exit code ${result.exitCode}`}); ${where}`)
    }
  } finally {
    opts.signal?.removeEventListener('abort', stop)
  }
}
