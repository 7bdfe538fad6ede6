import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfigAndPlugins } from '../../core/platform/plugin-manifests.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { exampleSource, installPlugin, projectDir } from '../helpers/example-plugin.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { processesWithMark, runCli, runCliHere, startServe } from '../helpers/serve-process.js'

// A runtime kind of a plugin's own as a third party installs it: docs/examples/sycl-runtime-plugin.ts by package
// name beside config.yaml, in a real `llamagate serve`. Its hardware is a stand-in `sycl-ls` (the machine has no
// Intel GPU); its llama-server is the real CPU build, found through the kind's binDirs.

const SYCL_LS = `#!/bin/sh
echo '[opencl:cpu][opencl:0] Intel(R) OpenCL, Intel(R) Xeon(R) CPU OpenCL 3.0 (Build 0) [2024.17.3.0.08_160000]'
echo '[level_zero:gpu][level_zero:0] Intel(R) oneAPI Unified Runtime over Level-Zero, Intel(R) Arc(TM) A770 Graphics 12.55.8 [1.3.29735]'
`

t.test('the SYCL kind is detected, chosen over the CPU, found, and starts llama-server with its flags and variables', async (t) => {
  const dir = await projectDir(t)
  await installPlugin(dir, 'llamagate-plugin-sycl', await exampleSource('sycl-runtime-plugin.ts'))
  const probes = join(dir, 'probes')
  await mkdir(probes)
  await writeFile(join(probes, 'sycl-ls'), SYCL_LS)
  await chmod(join(probes, 'sycl-ls'), 0o755)
  const config = join(dir, 'config.yaml')
  await writeFile(config, [
    `data_dir: ${dir}`, 'log_level: info', 'port: 0', 'build_gpu_runtime: false',
    'default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, num_predict: 4, ignore_eos: true }',
    'models: { acme/tiny: { args: [--main-gpu, "1"] } }',
    'plugins:', '  - path: llamagate-plugin-sycl', '',
  ].join('\n'))
  const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const imported = await runCliHere(['import', 'acme/tiny', model, '--config', config])
  t.equal(imported.code, 0, imported.stderr)

  // Its llama-server where LLAMA_SYCL_BIN says (the kind's binDirs), its probe on PATH; no build is named in config.yaml.
  const env = { PATH: `${probes}:${process.env.PATH}`, LLAMA_SYCL_BIN: (await cpuRuntime()).binDir }
  const serve = await startServe(['--config', config], env)
  t.teardown(() => { serve.child.kill('SIGTERM'); return serve.exited })
  t.match(serve.output(), /runtime: sycl \(llama\.cpp .*, plugin\) — 1 sycl device\(s\) found/, 'the start-up line says why')

  const runtimes = await (await fetch(`${serve.address}/api/runtimes`)).json() as Record<string, any>
  t.equal(runtimes.chosen.backend, 'sycl')
  t.equal(runtimes.chosen.source, 'plugin')
  t.same(runtimes.devices.filter((d: any) => d.backend === 'sycl'), [{ backend: 'sycl', index: 0, name: 'Intel(R) Arc(TM) A770 Graphics', totalBytes: 0, freeBytes: 0 }])

  for (const [url, body] of [
    ['/api/chat', { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/chat/completions', { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }] }],
  ] as const) {
    const res = await fetch(`${serve.address}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    t.equal(res.status, 200, `${url}: ${await res.clone().text()}`)
  }
  const servers = []
  for (const pid of await processesWithMark(serve.mark)) {
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '')).split('\0').filter((arg) => arg !== '')
    if (cmdline[0]?.endsWith('/llama-server')) servers.push({ cmdline, environ: (await readFile(`/proc/${pid}/environ`, 'latin1')).split('\0') })
  }
  t.equal(servers.length, 1, 'one llama-server serves the model')
  const [server] = servers
  const flags = server!.cmdline.join(' ')
  t.match(flags, / --flash-attn auto --split-mode none --main-gpu 0 --main-gpu 1$/, 'the kind\'s flags, after the gateway\'s own, before the model\'s (which win)')
  t.ok(server!.environ.includes('ZES_ENABLE_SYSMAN=1') && server!.environ.includes('SYCL_CACHE_PERSISTENT=1'), 'the kind\'s variables')
  t.ok(server!.environ.includes(`LLAMAGATE_TEST_MARK=${serve.mark}`), 'over the gateway\'s environment, not instead of it')

  // doctor, with `runtime: sycl` forced: the kind, its device, its build; a client command finds the server by the
  // core's keys without loading the plugin. A kind nobody adds is refused by name.
  await writeFile(config, `${await readFile(config, 'utf8')}runtime: sycl\n`)
  const doctor = await runCli(['doctor', '--config', config], env)
  t.match(doctor.stdout, /^✓ runtime: sycl chosen \(llama\.cpp .*\): forced by config \(runtime: sycl\)$/m, doctor.stderr)
  t.match(doctor.stdout, /^✓ build: sycl, llama\.cpp .*, found by its plugin: /m)
  t.match(doctor.stdout, /sycl0 Intel\(R\) Arc\(TM\) A770 Graphics/)
  await writeFile(config, (await readFile(config, 'utf8')).replace('runtime: sycl', 'runtime: cann'))
  const refused = await t.rejects(loadConfigAndPlugins({ config }, {}))
  t.match((refused as Error).message, /runtime = "cann" is not allowed: must be one of "auto", "cuda", "rocm", "metal", "vulkan", "cpu", "sycl"/)
})
