import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { dirname, join } from 'node:path'
import t from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { processesWithMark, runCli, startServe } from '../../helpers/serve-process.js'

type Test = Parameters<typeof tempDir>[0]

/** A config.yaml on a fresh data folder, with the test runtime named and `extra` lines added. */
async function configFile (t: Test, opts: { extra?: string, bin?: string, port?: number } = {}): Promise<{ dir: string, config: string }> {
  const dir = await tempDir(t)
  const bin = opts.bin ?? (await cpuRuntime()).binDir
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nport: ${opts.port ?? 0}\nruntimes:\n  cpu: { bin: ${bin} }\ndefault_options: { num_ctx: 256, num_parallel: 1, num_thread: 1 }\n${opts.extra ?? ''}`)
  return { dir, config }
}

/** A port nothing listens on: one the system gave out, then closed. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Where conversion is not what a test is about: no interpreter to import torch with (seconds on a busy machine). */
const NO_PYTHON = 'conversion: { python: /nonexistent/python3 }\n'

/** Only the system's own folders on PATH: no llama-server a developer installed can be found and chosen. */
const BARE_PATH = `${dirname(process.execPath)}:/usr/bin:/bin`

/** The doctor's lines by check name (a check may have several: one per build). */
function lines (stdout: string): string[] {
  return stdout.trimEnd().split('\n')
}
function line (stdout: string, name: string): string {
  const found = lines(stdout).filter((l) => l.slice(2).startsWith(`${name}: `))
  if (found.length !== 1) throw new Error(`expected one "${name}" line, got ${found.length}:\n${stdout}`)
  return found[0]!
}

t.test('doctor with a server running: every line ✓, exit 0; --json is the same checks, with what the server reports', async (t) => {
  const { dir, config } = await configFile(t)
  const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  t.equal((await runCli(['import', 'acme/tiny', model, '--config', config])).code, 0)
  const serve = await startServe(['--config', config], { PATH: BARE_PATH })
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const mark = randomUUID()

  const result = await runCli(['doctor', '--config', config, '--host', serve.address], { LLAMAGATE_TEST_MARK: mark, PATH: BARE_PATH })
  t.equal(result.code, 0, result.stderr)
  t.equal(result.stderr, '')
  t.same(await processesWithMark(mark), [], 'doctor left no process behind (llama-server and python probes ended)')
  const out = result.stdout
  const runtime = await cpuRuntime()
  const status = await (await fetch(`${serve.address}/api/convert/status`)).json() as { ready: boolean, quantize: string | null, fix: string | null }
  const gpu = /; (cuda|rocm|metal|vulkan)\d/.test(line(out, 'hardware'))
  for (const l of lines(out)) {
    // Conversion needs Python packages a machine may lack: its mark must agree with what the server says.
    if (l.slice(2).startsWith('conversion: ')) continue
    // On a GPU machine the test's CPU build is chosen with a warning that says how to build for the GPU.
    if (gpu && /^! runtime: \w+ device found .* npm run runtime:build -- --backend \w+$/.test(l)) continue
    t.match(l, /^✓ /, `✓ ${l}`)
  }
  t.match(line(out, 'config'), `✓ config: ${config}`)
  t.match(line(out, 'hardware'), /^✓ hardware: CPU \d+ cores, .* \(\d+(\.\d+)? GiB, \d+(\.\d+)? GiB free\)/, 'the CPU and its memory')
  t.equal(line(out, 'build'), `✓ build: cpu, llama.cpp ${runtime.version}${runtime.commit ? ` (${runtime.commit})` : ''}, named in config: ${runtime.binDir}`)
  t.match(lines(out).find((l) => l.startsWith('✓ runtime: ')), new RegExp(`^✓ runtime: cpu chosen \\(llama\\.cpp ${runtime.version} in ${runtime.binDir}\\): `), 'the build chosen and why')
  const conversion = line(out, 'conversion')
  if (status.ready && status.quantize !== null) t.match(conversion, /^✓ conversion: ready \(python \S+/, 'conversion ready, as the server says')
  else t.match(conversion, new RegExp(`^[✗!] conversion: .* — fix: ${status.fix!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`), 'conversion not ready, as the server says, with its fix')
  t.equal(line(out, 'prompt cache'), `✓ prompt cache: ${join(dir, 'models', '.prompt-cache')}: not made yet (serve makes it)`, 'no model loaded yet')
  t.match(line(out, 'models'), new RegExp(`^✓ models: ${join(dir, 'models')}: 1 model, \\d+(\\.\\d+)? [GT]iB free on its file system$`))
  const { version: ollamaApi, llamagate_version: version } = await (await fetch(`${serve.address}/api/version`)).json() as { version: string, llamagate_version: string }
  t.equal(line(out, 'server'), `✓ server: llamagate ${version} (Ollama API ${ollamaApi}) answers at ${serve.address}`)
  // The tests' processes leave Ollama's port alone (LLAMAGATE_OLLAMA_LISTEN=off); test/plugins/native-api/ollama-port.case.ts has the rest.
  t.equal(line(out, 'ollama clients'), `✓ ollama clients: ollama_listen is off: they need their base URL set (${serve.address})`)

  const json = await runCli(['doctor', '--config', config, '--host', serve.address, '--json'], { PATH: BARE_PATH })
  t.equal(json.code, 0, json.stderr)
  const report = JSON.parse(json.stdout) as {
    ok: boolean
    checks: Array<{ name: string, status: string, message: string, fix: string | null }>
    runtimes: Record<string, unknown>
    conversion: { ready: boolean }
    models: { dir: string, models: number, writable: boolean, freeBytes: number }
    server: { url: string, version: string, ollamaApi: string }
  }
  t.equal(report.ok, true)
  t.same(report.checks.map((c) => c.name).filter((n, i, all) => all.indexOf(n) === i), ['config', 'hardware', 'build', 'runtime', 'patches', 'conversion', 'prompt cache', 'models', 'server', 'ollama clients'])
  // Free memory and room change between two runs; everything else is the same.
  const figures = (text: string): string => text.replace(/\d+(\.\d+)? ([KMGT]iB|bytes)/g, 'SIZE')
  t.same(report.checks.map((c) => figures(`${c.status === 'ok' ? '✓' : c.status === 'warn' ? '!' : '✗'} ${c.name}: ${c.message}${c.fix !== null ? ` — fix: ${c.fix}` : ''}`)), lines(out).map(figures), 'the same checks as the lines')
  const api = await (await fetch(`${serve.address}/api/runtimes`)).json() as Record<string, unknown>
  for (const key of ['runtime', 'chosen', 'reason', 'warning', 'quantize', 'builds', 'rejected']) t.same(report.runtimes[key], api[key], `runtimes.${key} as GET /api/runtimes says`)
  t.equal(report.conversion.ready, status.ready, 'conversion as GET /api/convert/status says')
  t.match(report.models, { dir: join(dir, 'models'), models: 1, writable: true })
  t.ok(report.models.freeBytes > 0)
  t.same(report.server, { url: serve.address, version, ollamaApi })
})

t.test('doctor with no server: the ✗ line says it is not running and how to start it; exit 1', async (t) => {
  const port = await closedPort()
  // The address comes from the config file, as serve would listen.
  const { config } = await configFile(t, { port, extra: NO_PYTHON })
  const result = await runCli(['doctor', '--config', config])
  t.equal(result.code, 1, 'exit 1: the server does not answer')
  t.equal(line(result.stdout, 'server'), `✗ server: not running at http://127.0.0.1:${port} (connection refused) — fix: llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)`)
  t.match(line(result.stdout, 'runtime'), /^✓ runtime: cpu chosen/, 'the machine checks run all the same')
  t.match(line(result.stdout, 'patches'), /^✓ patches: llamagate's patch set: cache groups, slot saves with context checkpoints, saves of the RAM prompt cache$/, 'the runtime built by llamagate carries its patches')
  t.match(line(result.stdout, 'conversion'), /^✗ conversion: not ready: \/nonexistent\/python3: not found \(conversion\.python names an interpreter of your own: a server start installs nothing into it\) — fix: npm run setup:converter; or by hand: on Debian\/Ubuntu, apt-get install -y /, 'conversion not ready: the problem, what a start does about it, and the command that fixes it')
  t.equal(result.stderr, '', 'findings go to stdout; nothing is an error of the command itself')
  const json = JSON.parse((await runCli(['doctor', '--config', config, '--json'])).stdout) as { ok: boolean, server: { version: string | null }, checks: Array<{ name: string, status: string }> }
  t.equal(json.ok, false)
  t.equal(json.server.version, null)
  t.match(json.checks.find((c) => c.name === 'server'), { status: 'fail' })
})

t.test('doctor with a server that wants an API key: ✗ without LLAMAGATE_API_KEY (exit 1), ✓ with it', async (t) => {
  const { config } = await configFile(t, { extra: `auth: { api_keys: [doctor-secret] }\n${NO_PYTHON}` })
  const serve = await startServe(['--config', config])
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const without = await runCli(['doctor', '--config', config, '--host', serve.address])
  t.equal(without.code, 1, 'the other commands would be refused: not healthy')
  t.match(line(without.stdout, 'server'), /^✓ server: llamagate \S+ \(Ollama API \S+\) answers at /, '/api/version needs no key')
  t.equal(line(without.stdout, 'api key'), '✗ api key: the server wants an API key and LLAMAGATE_API_KEY is not set — fix: set LLAMAGATE_API_KEY to one of the server\'s keys (its auth.api_keys)')
  const right = await runCli(['doctor', '--config', config, '--host', serve.address], { LLAMAGATE_API_KEY: 'doctor-secret' })
  t.equal(right.code, 0, right.stdout)
  t.notMatch(right.stdout, /api key/, 'no key line when the key is taken')
})

t.test('doctor: a runtime folder in config that does not exist: ✗ for it and for the runtime, each with its fix', async (t) => {
  const { config } = await configFile(t, { bin: '/nonexistent/llama.cpp/bin' })
  const result = await runCli(['doctor', '--config', config, '--host', `127.0.0.1:${await closedPort()}`], { PATH: BARE_PATH })
  t.equal(result.code, 1)
  t.equal(line(result.stdout, 'build'), `✗ build: /nonexistent/llama.cpp/bin does not run: /nonexistent/llama.cpp/bin/llama-server does not exist — fix: set runtimes.cpu.bin in ${config} to a folder holding a working llama-server, or remove it`)
  t.match(line(result.stdout, 'runtime'), /^✗ runtime: none chosen: no llama\.cpp build found — fix: npm run runtime:build -- --backend (cpu|cuda|rocm|metal|vulkan), or name a folder holding llama-server under runtimes in config\.yaml$/)
  t.match(line(result.stdout, 'conversion'), /^✗ conversion: not ready: no llama\.cpp source tree.* — fix: npm run runtime:build /, 'no build, so no source tree for the converter either')
})

t.test('doctor: runtime: cuda on a machine without a CUDA build: ✗ with the build command', async (t) => {
  const { config } = await configFile(t, { extra: `runtime: cuda\n${NO_PYTHON}` })
  const result = await runCli(['doctor', '--config', config, '--host', `127.0.0.1:${await closedPort()}`], { PATH: BARE_PATH })
  t.equal(result.code, 1)
  t.match(line(result.stdout, 'build'), /^✓ build: cpu, /, 'the CPU build is found')
  t.match(line(result.stdout, 'runtime'), /^✗ runtime: none chosen: runtime cuda is forced by config but no cuda build was found — fix: npm run runtime:build -- --backend cuda( \(on a machine with a cuda device: none was found here\))?, or set runtime: auto \(config\.yaml or LLAMAGATE_RUNTIME\)$/)
})

t.test('doctor: the models folder: fresh and empty, not made yet (and not made by doctor), not a folder; servers that are not llamagate', async (t) => {
  // Each run checks a models folder and, at its --host, a server of another kind: the two checks are independent.
  const { config } = await configFile(t, { extra: NO_PYTHON })
  const empty = await tempDir(t)

  // A server that takes the connection and never answers does not hold doctor up.
  const sockets: Socket[] = []
  const silent: Server = createServer((socket) => { sockets.push(socket) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sockets) s.destroy(); silent.close() })
  const started = Date.now()
  const made = await runCli(['doctor', '--config', config, '--host', `127.0.0.1:${(silent.address() as { port: number }).port}`, '--models', empty])
  t.equal(made.code, 1)
  t.match(line(made.stdout, 'models'), new RegExp(`^✓ models: ${empty}: 0 models, \\d+(\\.\\d+)? [GT]iB free on its file system$`))
  t.match(line(made.stdout, 'server'), /^✗ server: http:\/\/127\.0\.0\.1:\d+ took the connection but did not answer within 5 s — fix: see what listens there; llamagate serve/)
  t.ok(Date.now() - started < 60_000, `done in ${Date.now() - started} ms`)

  // A real Ollama on the address (its /api/version has no llamagate_version) is not taken for llamagate.
  const ollama = createHttpServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"0.14.0"}'))
  await new Promise<void>((resolve) => ollama.listen(0, '127.0.0.1', resolve))
  t.teardown(() => ollama.close())
  const address = `http://127.0.0.1:${(ollama.address() as { port: number }).port}`
  const fresh = join(empty, 'not', 'yet')
  const later = await runCli(['doctor', '--config', config, '--host', address, '--models', fresh])
  t.equal(later.code, 1)
  t.match(line(later.stdout, 'models'), new RegExp(`^✓ models: ${fresh}: not made yet \\(serve makes it\\), \\d+(\\.\\d+)? [GT]iB free`))
  t.notOk(existsSync(join(empty, 'not')), 'doctor made no folder')
  t.equal(line(later.stdout, 'server'), `✗ server: ${address} answers as Ollama 0.14.0, not llamagate — fix: llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)`)

  const file = join(empty, 'a-file')
  await writeFile(file, 'x')
  const blocked = await runCli(['doctor', '--config', config, '--host', `127.0.0.1:${await closedPort()}`, '--models', join(file, 'models')])
  t.equal(line(blocked.stdout, 'models'), `✗ models: ${join(file, 'models')} cannot be used: ${file} is not a folder — fix: point models_dir (config.yaml, LLAMAGATE_MODELS or --models) at a folder you can write, or fix its permissions`)
})

// What `help doctor` says the exit status means is checked with every command's help, in help.case.ts.
t.test('doctor: bad usage is exit 2 with the usage', async (t) => {
  const extra = await runCli(['doctor', 'now'])
  t.equal(extra.code, 2)
  t.match(extra.stderr, /llamagate doctor: takes no arguments, got "now"/)
})
