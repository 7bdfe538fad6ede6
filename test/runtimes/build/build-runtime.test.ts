import { spawn } from 'node:child_process'
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import t, { type Test } from 'tap'
import { RuntimeRegistry } from '../../../runtimes/registry.js'
import { buildRuntime, cudaArchitectures } from '../../../scripts/build/build-runtime.js'
import { testConfig, tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'

const PROBES = fileURLToPath(new URL('../../fixtures/probes/', import.meta.url))
const SCRIPT = fileURLToPath(new URL('../../../scripts/build/build-runtime.ts', import.meta.url))

/** A llama.cpp-like checkout (a git repository tagged b9999) and a fake cmake first on PATH. */
async function setUp (t: Test): Promise<{ src: string, log: string }> {
  const src = await tempDir(t)
  await writeFile(join(src, 'CMakeLists.txt'), 'project(llama.cpp)\n')
  const git = (...args: string[]) => execa('git', ['-C', src, '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args])
  await git('init', '-q')
  await git('add', '.')
  await git('commit', '-q', '-m', 'x')
  await git('tag', 'b9999')
  const bin = await tempDir(t)
  await copyFile(join(PROBES, 'fake-cmake'), join(bin, 'cmake'))
  const log = join(await tempDir(t), 'cmake.log')
  const saved = { ...process.env }
  process.env.PATH = `${bin}:${process.env.PATH}`
  process.env.FAKE_CMAKE_LOG = log
  process.env.FAKE_LLAMA_SERVER = join(PROBES, 'fake-llama-server')
  t.teardown(() => { process.env = saved })
  return { src, log }
}

t.test('builds with the pinned flags and installs into <data_dir>/runtimes/llama.cpp-<tag>/<backend>/bin, where the registry finds it', async (t) => {
  const { src, log } = await setUp(t)
  const config = await testConfig(t)
  const said: string[] = []
  const bin = await buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: src, jobs: 3, say: (l) => said.push(l) })
  t.equal(bin, join(config.dataDir, 'runtimes', 'llama.cpp-b9999', 'cpu', 'bin'))
  const [configure, build] = (await readFile(log, 'utf8')).trim().split('\n') as [string, string]
  for (const flag of ['-DGGML_RPC=ON', '-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF', '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DBUILD_SHARED_LIBS=OFF', '-DCMAKE_BUILD_TYPE=Release']) {
    t.ok(configure.split(' ').includes(flag), flag)
  }
  t.match(configure, `-S ${src} -B ${join(config.dataDir, 'build', 'b9999-cpu')}`)
  t.notMatch(configure, /GGML_CUDA/)
  t.equal(build, `--build ${join(config.dataDir, 'build', 'b9999-cpu')} --target llama-server llama-quantize ggml-rpc-server -j 3`)
  t.match(said.join('\n'), /\[1\/3\] configuring cpu[\s\S]*\[2\/3\] building llama-server, llama-quantize, ggml-rpc-server with 3 jobs[\s\S]*\[3\/3\] installing[\s\S]*installed into/)
  const info = JSON.parse(await readFile(join(bin, '..', 'build-info.json'), 'utf8'))
  t.match(info, { tag: 'b9999', backend: 'cpu', source: src })
  t.match(info.commit, /^[0-9a-f]{40}$/)
  t.equal(info.patches_digest, null, 'a checkout named by the user is built as it is: no patch set')
  t.same(await readdir(join(config.dataDir, 'runtimes', 'llama.cpp-b9999')), ['cpu'], 'no staging folder is left')
  const registry = await RuntimeRegistry.create({ config, env: { PATH: '/usr/bin:/bin' } })
  t.equal(registry.chosen?.binDir, bin)
  t.equal(registry.chosen?.source, 'built')
  t.equal(registry.chosen?.quantizePath, join(bin, 'llama-quantize'))
  t.equal(registry.chosen?.rpcServerPath, join(bin, 'ggml-rpc-server'), 'the RPC worker is installed beside llama-server')
})

t.test('a rebuild replaces the old build whole; a failed one leaves it untouched', async (t) => {
  const { src } = await setUp(t)
  const config = await testConfig(t)
  process.env.FAKE_BUILD_MARK = 'first'
  const bin = await buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: src, say: () => {} })
  process.env.FAKE_BUILD_MARK = 'second'
  await buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: src, say: () => {} })
  t.match(await readFile(join(bin, 'llama-quantize'), 'utf8'), /quantize second/)
  process.env.FAKE_BUILD_MARK = 'third'
  process.env.FAKE_CMAKE_FAIL = 'build'
  await t.rejects(buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: src, say: () => {} }), /cmake build failed \(exit code 2\)/)
  process.env.FAKE_CMAKE_FAIL = 'configure'
  await t.rejects(buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: src, say: () => {} }), /cmake configure failed \(exit code 1\)/)
  t.match(await readFile(join(bin, 'llama-quantize'), 'utf8'), /quantize second/, 'the working build is kept')
  t.same(await readdir(join(config.dataDir, 'runtimes', 'llama.cpp-b9999')), ['cpu'])
})

t.test('a source folder that is not llama.cpp is refused', async (t) => {
  const config = await testConfig(t)
  const empty = await tempDir(t)
  await t.rejects(buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: empty, say: () => {} }), { message: `${empty} is not a llama.cpp source tree (no CMakeLists.txt)` })
})

t.test('CUDA: built for the compute capability of the GPUs present, or the ones asked for', async (t) => {
  const dir = await tempDir(t)
  await copyFile(join(PROBES, 'nvidia-smi-h100'), join(dir, 'nvidia-smi'))
  t.same(await cudaArchitectures(undefined, { PATH: `${dir}:/usr/bin:/bin` }), ['90', '86'])
  t.same(await cudaArchitectures('86;89', { PATH: '/usr/bin:/bin' }), ['86', '89'])
  t.same(await cudaArchitectures('120a-real', { PATH: '/usr/bin:/bin' }), ['120a-real'])
  t.equal(await cudaArchitectures('portable', { PATH: '/usr/bin:/bin' }), 'portable')
  await t.rejects(cudaArchitectures('sm_90', {}), /--cuda-arch "sm_90" is not a list of CUDA architectures/)
  const broken = await tempDir(t)
  await copyFile(join(PROBES, 'nvidia-smi-broken'), join(broken, 'nvidia-smi'))
  await t.rejects(cudaArchitectures(undefined, { PATH: `${broken}:/usr/bin:/bin` }), /no NVIDIA GPU answered nvidia-smi.*pass --cuda-arch <e\.g\. 90/)
})

t.test('CUDA through the script: GGML_CUDA on, architectures limited', async (t) => {
  const { src, log } = await setUp(t)
  const config = await testConfig(t)
  await buildRuntime({ backend: 'cuda', dataDir: config.dataDir, source: src, cudaArch: '90', say: () => {} })
  const configure = (await readFile(log, 'utf8')).split('\n')[0]!
  t.match(configure, /-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90$/)
})

/** Runs the script as `npm run runtime:build` does (here under the test's TypeScript loader). */
function runScript (args: string[]): Promise<{ code: number | null, out: string }> {
  const child = spawn(process.execPath, [...process.execArgv, SCRIPT, ...args], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })))
}

t.test('the command line: usage, and bad arguments refused before anything is built', async (t) => {
  const help = await runScript(['--help'])
  t.equal(help.code, 0)
  t.match(help.out, /^usage: npm run runtime:build -- \[--backend cpu\|cuda\|rocm\|metal\|vulkan\]/)
  const badBackend = await runScript(['--backend', 'tpu'])
  t.equal(badBackend.code, 1)
  t.match(badBackend.out, /runtime build failed: --backend must be one of cuda, rocm, metal, vulkan, cpu, not "tpu"/)
  const badJobs = await runScript(['--jobs', '0'])
  t.equal(badJobs.code, 1)
  t.match(badJobs.out, /--jobs must be a whole number of at least 1, not "0"/)
  const unknown = await runScript(['--backnd', 'cpu'])
  t.equal(unknown.code, 1)
  t.match(unknown.out, /Unknown option '--backnd'[\s\S]*usage: npm run runtime:build/)
})

t.test('the patch set: applied to the pinned source as released, once per build; one that does not fit is named', async (t) => {
  const { src } = await setUp(t)
  const { applyPatches, patchFiles, PATCHES_DIR } = await import('../../../runtimes/build/llama-cpp-patches.js')
  await writeFile(join(src, 'server.cpp'), 'int salt = 0;\n')
  const git = (...args: string[]) => execa('git', ['-C', src, '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args])
  await git('add', '.')
  await git('commit', '-q', '-m', 'server')
  await writeFile(join(src, 'server.cpp'), 'int salt = 1;\n')
  const patch = join(await tempDir(t), '0001-salt.patch')
  await writeFile(patch, `Subject: [PATCH] a change with its why\n\n${(await git('diff')).stdout}\n`)
  await git('checkout', 'server.cpp')
  t.same(await applyPatches(src, [patch]), ['0001-salt.patch'])
  t.equal(await readFile(join(src, 'server.cpp'), 'utf8'), 'int salt = 1;\n', 'applied')
  t.same(await applyPatches(src, [patch]), ['0001-salt.patch'], 'again on the kept source: put back as released, then patched')
  t.equal(await readFile(join(src, 'server.cpp'), 'utf8'), 'int salt = 1;\n', 'not applied twice')
  await writeFile(join(src, 'server.cpp'), 'int pepper = 2;\n')
  await git('commit', '-q', '-am', 'another release')
  await t.rejects(applyPatches(src, [patch]), /the llama\.cpp patch .*0001-salt\.patch does not apply to /, 'made for another release: named')
  const shipped = await patchFiles()
  t.ok(shipped.length >= 1 && shipped.every((p) => p.startsWith(PATCHES_DIR) && p.endsWith('.patch')), `the shipped set: ${shipped.map((p) => p.slice(PATCHES_DIR.length + 1)).join(', ')}`)
  t.match(await readFile(shipped[0]!, 'utf8'), /^From: [\s\S]*Subject: \[PATCH\] server: per-request cache_salt/, 'each written to be offered upstream: a subject and its why')
  // llama.cpp's subjects name the part they change first (server:, llama:, vocab:...).
  for (const file of shipped) t.match(await readFile(file, 'utf8'), /^From: .*\nSubject: \[PATCH\] [a-z][a-z-]*: .+\n\n[\s\S]{200,}\ndiff --git /, `${file.slice(PATCHES_DIR.length + 1)}: a subject naming its part, and its why`)
})

t.test('the patch set\'s digest: part of a built runtime\'s cache key, so a changed patch is built again', async (t) => {
  const { patchSetDigest } = await import('../../../runtimes/build/llama-cpp-patches.js')
  const dir = await tempDir(t)
  const a = join(dir, '0001-a.patch')
  const b = join(dir, '0002-b.patch')
  await writeFile(a, 'one')
  await writeFile(b, 'two')
  const digest = await patchSetDigest([a, b])
  t.match(digest, /^[0-9a-f]{16}$/)
  t.equal(await patchSetDigest([a, b]), digest, 'the same files, the same digest')
  await writeFile(b, 'two, changed')
  t.not(await patchSetDigest([a, b]), digest, 'a patch changed')
  t.not(await patchSetDigest([a]), await patchSetDigest([a, b]), 'a patch more')
})
