import { cpus } from 'node:os'
import { existsSync, realpathSync } from 'node:fs'
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { execa } from 'execa'
import { loadConfig } from '../core/config.js'
import { BACKENDS, type Backend } from '../core/config-schema.js'
import { builtRuntimesDir } from '../runtimes/registry.js'
import { findOrFetchSource, type Say } from './llama-cpp-source.js'

const TARGETS = ['llama-server', 'llama-quantize']

/** CMake options per backend; CUDA is limited to the GPU at hand so that it builds in minutes, not hours. */
async function backendFlags (backend: Backend, say: Say): Promise<string[]> {
  switch (backend) {
    case 'cpu': return []
    case 'cuda': {
      const probe = await execa('nvidia-smi', ['--query-gpu=compute_cap', '--format=csv,noheader'], { reject: false, timeout: 5000 })
      const caps = probe.exitCode === 0 ? [...new Set(probe.stdout.split('\n').map((c) => c.trim().replace('.', '')).filter(Boolean))] : []
      if (caps.length === 0) say('no GPU to read a compute capability from: building for the architectures nvcc picks by default (slow)')
      return ['-DGGML_CUDA=ON', ...(caps.length > 0 ? [`-DCMAKE_CUDA_ARCHITECTURES=${caps.join(';')}`] : [])]
    }
    case 'rocm': return ['-DGGML_HIP=ON']
    case 'metal': return ['-DGGML_METAL=ON']
    case 'vulkan': return ['-DGGML_VULKAN=ON']
  }
}

/**
 * Builds llama-server and llama-quantize for a backend and installs them under
 * `<dataDir>/runtimes/llama.cpp-<tag>/<backend>/bin`, atomically: a half-finished build is never found.
 */
export async function buildRuntime (opts: { backend: Backend, dataDir: string, source: string | null, jobs?: number, say?: Say }): Promise<string> {
  const say = opts.say ?? ((line: string) => process.stdout.write(`[runtime:build] ${line}\n`))
  const { dir: src, tag } = await findOrFetchSource(opts.dataDir, opts.source, say)
  const install = join(builtRuntimesDir(opts.dataDir), `llama.cpp-${tag}`, opts.backend)
  const buildDir = join(opts.dataDir, 'build', `${tag}-${opts.backend}`)
  const generator = (await execa('ninja', ['--version'], { reject: false })).exitCode === 0 ? ['-G', 'Ninja'] : []
  const configure = ['-S', src, '-B', buildDir, ...generator, '-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF',
    '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DBUILD_SHARED_LIBS=OFF', ...await backendFlags(opts.backend, say)]
  say(`configuring (${opts.backend}): cmake ${configure.join(' ')}`)
  await execa('cmake', configure, { stdout: 'inherit', stderr: 'inherit' })
  const jobs = String(opts.jobs ?? cpus().length)
  say(`building ${TARGETS.join(', ')} with ${jobs} jobs (about 6 minutes on 2 cores for the CPU build)`)
  await execa('cmake', ['--build', buildDir, '--target', ...TARGETS, '-j', jobs], { stdout: 'inherit', stderr: 'inherit' })
  const staging = `${install}.tmp-${process.pid}`
  await rm(staging, { recursive: true, force: true })
  await mkdir(join(staging, 'bin'), { recursive: true })
  for (const target of TARGETS) await copyFile(join(buildDir, 'bin', target), join(staging, 'bin', target))
  const commit = await execa('git', ['-C', src, 'rev-parse', 'HEAD'], { reject: false })
  await writeFile(join(staging, 'build-info.json'), JSON.stringify({ tag, backend: opts.backend, commit: commit.stdout.trim() || null, source: src, flags: configure, built_at: new Date().toISOString() }, null, 2))
  await rm(install, { recursive: true, force: true })
  await rename(staging, install)
  say(`installed into ${install}`)
  return join(install, 'bin')
}

async function main (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { backend: { type: 'string', default: 'cpu' }, src: { type: 'string' }, jobs: { type: 'string' } } })
  const backend = values.backend as Backend
  if (!BACKENDS.includes(backend)) throw new Error(`--backend must be one of ${BACKENDS.join(', ')}`)
  const config = loadConfig()
  const bin = await buildRuntime({ backend, dataDir: config.dataDir, source: values.src ?? config.llamaCppSrc, jobs: values.jobs ? Number(values.jobs) : undefined })
  if (!existsSync(join(bin, 'llama-server'))) throw new Error('build finished without llama-server')
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err) => { process.stderr.write(`runtime build failed: ${(err as Error).message}\n`); process.exit(1) })
}
