import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { basename, dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../helpers/app.js'
import { FakeHub } from '../helpers/fake-hub.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { processesWithMark, runCli, runCliHere, startServe, type ServeProcess } from '../helpers/serve-process.js'

// README's environment table: each variable changes what `llamagate serve` (the real CLI, as a process) does.
// Precedence (README): built-in defaults < config.yaml (or --config, or LLAMAGATE_CONFIG) < environment < flags.

type Entry = Record<string, any>
const MINUTE = 60_000

/** A port nothing listens on now, on the given address. */
function freePort (host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/**
 * A data folder laid out as the runtime build leaves it (`runtimes/llama.cpp-<tag>/cpu/bin`), its cpu folder a
 * link to the runtime the tests use: serve finds the runtime through LLAMAGATE_HOME alone, and builds nothing.
 */
async function homeWithRuntime (t: Test): Promise<string> {
  const home = await tempDir(t, 'llamagate-home-')
  const cpuDir = dirname((await cpuRuntime()).binDir)
  const version = basename(dirname(cpuDir))
  const folder = join(home, 'runtimes', version.startsWith('llama.cpp-') ? version : 'llama.cpp-v0.0.0-test')
  await mkdir(folder, { recursive: true })
  await symlink(cpuDir, join(folder, 'cpu'))
  return home
}

async function serve (t: Test, env: Record<string, string>, args: string[] = []): Promise<ServeProcess> {
  const server = await startServe(args, { LLAMAGATE_LOG_LEVEL: 'info', ...env }, 60_000)
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL')
      await server.exited
    }
  })
  return server
}

/** SIGTERM, exit 0, and nothing it started left running. */
async function stop (t: Test, server: ServeProcess): Promise<void> {
  server.child.kill('SIGTERM')
  // The timer is cancelled once the process exits: a pending one would hold this test file open for 30 s.
  const cancel = new AbortController()
  const timeout = sleep(30_000, null, { signal: cancel.signal }).catch(() => null)
  const exit = await Promise.race([server.exited, timeout])
  cancel.abort()
  if (exit === null) throw new Error(`serve did not exit within 30 s of SIGTERM:\n${server.output()}`)
  t.equal(exit.code, 0, 'serve exited 0 on SIGTERM')
  const deadline = Date.now() + 10_000
  while ((await processesWithMark(server.mark)).length > 0 && Date.now() < deadline) await sleep(50)
  t.same(await processesWithMark(server.mark), [], 'no process of it left')
}

const json = async (res: Response): Promise<Entry> => res.json() as Promise<Entry>
const get = (url: string, headers: Record<string, string> = {}): Promise<Response> => fetch(url, { headers })
const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

async function tinyModel (t: Test, seed: number): Promise<string> {
  return (await writeTinyGguf({ file: join(await tempDir(t), `tiny-${seed}.gguf`), seed })).file
}

t.test('LLAMAGATE_CONFIG, _HOST, _PORT, _HOME, _MODELS, _KEEP_ALIVE, _RUNTIME, _MAX_LOADED_MODELS take effect; the environment wins over the file', async (t) => {
  const home = await homeWithRuntime(t)
  const models = join(await tempDir(t), 'models-elsewhere')
  const config = join(await tempDir(t), 'config.yaml')
  // The file says otherwise for port, keep_alive and the model limit: the environment must win over it.
  await writeFile(config, [
    'port: 1', 'keep_alive: 1m', 'runtime: auto',
    'limits: { max_loaded_models: 3 }',
    'default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 2 }', '',
  ].join('\n'))
  const host = '127.0.0.2'
  const port = await freePort(host)
  const env = {
    LLAMAGATE_CONFIG: config, LLAMAGATE_HOST: host, LLAMAGATE_PORT: String(port), LLAMAGATE_HOME: home,
    LLAMAGATE_MODELS: models, LLAMAGATE_KEEP_ALIVE: '7m', LLAMAGATE_RUNTIME: 'cpu', LLAMAGATE_MAX_LOADED_MODELS: '1',
  }
  // The CLI's import reads the same variables: the model lands in LLAMAGATE_MODELS. The second model is set up
  // in this process, into that folder by flag (a process more would only start Node again).
  const imported = await runCli(['import', 'acme/a', await tinyModel(t, 1)], env)
  t.equal(imported.code, 0, `import acme/a: ${imported.stderr.trim()}`)
  const second = await runCliHere(['import', 'acme/b', await tinyModel(t, 2), '--config', config, '--models', models])
  t.equal(second.code, 0, `import acme/b: ${second.stderr.trim()}`)
  const server = await serve(t, env)
  const url = server.address
  t.equal(url, `http://${host}:${port}`, 'LLAMAGATE_HOST and LLAMAGATE_PORT: the address it listens on')
  await t.rejects(fetch(`http://127.0.0.1:${port}/api/health`), 'not on 127.0.0.1')
  t.match(server.output(), new RegExp(`config: ${config.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`), 'LLAMAGATE_CONFIG: the start line names the file')
  // LLAMAGATE_MODELS (and not <LLAMAGATE_HOME>/models)
  const tags = (await json(await get(`${url}/api/tags`))).models.map((m: Entry) => m.name).sort()
  t.same(tags, ['acme/a', 'acme/b'], 'LLAMAGATE_MODELS: the models in that folder')
  t.ok(existsSync(join(models, 'acme', 'a', 'manifest.json')), 'stored under LLAMAGATE_MODELS')
  t.notOk(existsSync(join(home, 'models', 'acme')), 'not under LLAMAGATE_HOME/models')
  // LLAMAGATE_RUNTIME and LLAMAGATE_HOME (the runtime found under <home>/runtimes)
  const runtimes = await json(await get(`${url}/api/runtimes`))
  t.equal(runtimes.runtime, 'cpu', 'LLAMAGATE_RUNTIME: the setting')
  t.match(runtimes.reason, /forced by config \(runtime: cpu\)/, 'LLAMAGATE_RUNTIME: forced, over the file\'s auto')
  t.ok(runtimes.chosen?.binDir.startsWith(join(home, 'runtimes')), `LLAMAGATE_HOME: the runtime found under it (${runtimes.chosen?.binDir})`)
  // LLAMAGATE_KEEP_ALIVE over the file's 1m; the file's default_options still apply.
  t.equal((await post(`${url}/api/generate`, { model: 'acme/a', prompt: 'hi', stream: false })).status, 200)
  const loaded = (await json(await get(`${url}/api/ps`))).models as Entry[]
  t.equal(loaded.length, 1)
  t.ok(Math.abs(Date.parse(loaded[0]!.expires_at) - (Date.now() + 7 * MINUTE)) < 5000, `LLAMAGATE_KEEP_ALIVE 7m: expires_at ${loaded[0]!.expires_at}`)
  t.equal(loaded[0]!.context_length, 256, 'the config file\'s default_options')
  // LLAMAGATE_MAX_LOADED_MODELS 1 over the file's 3
  t.equal((await post(`${url}/api/generate`, { model: 'acme/b', prompt: 'hi', stream: false })).status, 200)
  t.same(((await json(await get(`${url}/api/ps`))).models as Entry[]).map((m) => m.name), ['acme/b'], 'LLAMAGATE_MAX_LOADED_MODELS 1: loading b unloaded a')
  await stop(t, server)
})

t.test('LLAMAGATE_API_KEYS, LLAMAGATE_ORIGINS, LLAMAGATE_MAX_QUEUE; models under LLAMAGATE_HOME when LLAMAGATE_MODELS is unset', async (t) => {
  const home = await homeWithRuntime(t)
  const config = join(await tempDir(t), 'config.yaml')
  await writeFile(config, 'default_options: { num_thread: 1, num_ctx: 32768, num_parallel: 1, max_tokens: 2 }\n')
  const server = await serve(t, {
    LLAMAGATE_CONFIG: config, LLAMAGATE_HOME: home, LLAMAGATE_PORT: '0',
    LLAMAGATE_API_KEYS: 'key-one, key-two', LLAMAGATE_ORIGINS: 'https://app.example', LLAMAGATE_MAX_QUEUE: '0',
  })
  const url = server.address
  const key = { authorization: 'Bearer key-two' }
  // LLAMAGATE_API_KEYS: comma-separated keys, each accepted; none or another refused; health stays public.
  t.equal((await get(`${url}/api/health`)).status, 200, '/api/health without a key')
  t.equal((await get(`${url}/api/tags`)).status, 401, 'no key: 401')
  t.equal((await get(`${url}/api/tags`, { authorization: 'Bearer key-three' })).status, 401, 'another key: 401')
  t.equal((await get(`${url}/api/tags`, { authorization: 'Bearer key-one' })).status, 200, 'the first key')
  t.equal((await get(`${url}/api/tags`, key)).status, 200, 'the second key (space after the comma trimmed)')
  // LLAMAGATE_ORIGINS adds to the configured origins.
  const added = await get(`${url}/api/tags`, { ...key, origin: 'https://app.example' })
  t.equal(added.status, 200, 'LLAMAGATE_ORIGINS: the added origin is allowed')
  t.equal(added.headers.get('access-control-allow-origin'), 'https://app.example')
  t.equal((await get(`${url}/api/tags`, { ...key, origin: 'http://localhost:5173' })).status, 200, 'the shipped origins still are')
  t.equal((await get(`${url}/api/tags`, { ...key, origin: 'https://other.example' })).status, 403, 'others are not')
  // Models go under <LLAMAGATE_HOME>/models when LLAMAGATE_MODELS is unset.
  // Trained for a long context, so that the busy answer below can run for seconds (32k tokens, end of text
  // ignored): the tiny model writes thousands of tokens a second, and a short answer ended before the next
  // request came on a loaded machine.
  const long = (await writeTinyGguf({ file: join(await tempDir(t), 'long.gguf'), seed: 3, nCtxTrain: 32_768 })).file
  const imported = await post(`${url}/api/import`, { model: 'acme/tiny', path: long }, key)
  t.equal(imported.status, 200)
  t.ok(existsSync(join(home, 'models', 'acme', 'tiny', 'manifest.json')), 'stored under LLAMAGATE_HOME/models')
  // LLAMAGATE_MAX_QUEUE 0: with the one slot busy, the next request is refused at once.
  const controller = new AbortController()
  t.teardown(() => controller.abort())
  const running = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 32_000, ignore_eos: true } }, key)
  const reader = running.body!.getReader()
  await reader.read() // generating: the slot is taken
  const refused = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'me too' }] }, key)
  t.equal(refused.status, 503, 'LLAMAGATE_MAX_QUEUE 0: no place in the queue')
  t.ok(refused.headers.get('retry-after'), 'with Retry-After')
  t.match(await json(refused), { error: /queue for "acme\/tiny" is full/ })
  await reader.cancel()
  await stop(t, server)
})

// One server for both: the hub's variables and the flags that win over LLAMAGATE_PORT and LLAMAGATE_MODELS.
t.test('HF_ENDPOINT and HF_TOKEN: a pull goes to that hub with that token; LLAMA_CPP_SRC names the converter\'s tree; flags win over the environment: --port over LLAMAGATE_PORT, --models over LLAMAGATE_MODELS', async (t) => {
  const dir = await tempDir(t)
  const [envModels, flagModels] = [join(dir, 'env-models'), join(dir, 'flag-models')]
  // Set up in this process (what serve then reads is the test), on a config of its own, not this home's.
  const setup = join(dir, 'setup.yaml')
  await writeFile(setup, `data_dir: ${dir}\n`)
  const imported = await runCliHere(['import', 'acme/flagged', await tinyModel(t, 5), '--config', setup, '--models', flagModels])
  t.equal(imported.code, 0, imported.stderr)
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  hub.tokens.add('hf_from_env')
  hub.addRepo('acme/private-GGUF', { private: true, files: [{ path: 'private-Q4_K_M.gguf', content: await readFile(await tinyModel(t, 4)) }] })
  const src = await tempDir(t, 'llamagate-src-')
  const [envPort, flagPort] = [await freePort(), await freePort()]
  const server = await serve(t, {
    LLAMAGATE_HOME: dir, LLAMAGATE_PORT: String(envPort), LLAMAGATE_MODELS: envModels, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_from_env', LLAMA_CPP_SRC: src,
  }, ['--port', String(flagPort), '--models', flagModels])
  const url = server.address
  t.equal(url, `http://127.0.0.1:${flagPort}`, '--port wins')
  t.same((await json(await get(`${url}/api/tags`))).models.map((m: Entry) => m.name), ['acme/flagged'], '--models wins')
  const pulled = await post(`${url}/api/pull`, { model: 'acme/private-GGUF', stream: false })
  t.equal(pulled.status, 200, 'a private repository pulls')
  t.same(await json(pulled), { status: 'success' })
  t.ok(hub.hubAuthorizations.includes('Bearer hf_from_env'), 'HF_ENDPOINT: the fake hub was asked; HF_TOKEN: with the token')
  t.same((await json(await get(`${url}/api/tags`))).models.map((m: Entry) => m.name).sort(), ['acme/flagged', 'acme/private-GGUF'], 'the pulled model beside the imported one')
  const status = await json(await get(`${url}/api/convert/status`))
  t.equal(status.llamaCppSrc, src, 'LLAMA_CPP_SRC: the converter\'s source tree')
  t.match(status.problems.join(' '), /has no convert_hf_to_gguf\.py/, 'and what is wrong with it')
  await stop(t, server)
})
