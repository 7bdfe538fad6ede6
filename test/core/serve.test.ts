import { readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../helpers/app.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { processesWithMark, runCli, startServe } from '../helpers/serve-process.js'

t.test('serve: starts, answers, and stops on SIGTERM and SIGINT with exit code 0 and no process left', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const dir = await tempDir(t)
    const serve = await startServe(['--port', '0', '--models', join(dir, 'models')], { LLAMAGATE_HOME: dir, LLAMAGATE_LOG_LEVEL: 'info' })
    t.teardown(() => { serve.child.kill('SIGKILL') })
    t.match(serve.output(), /listening on http:\/\/127\.0\.0\.1:\d+ \(config: .*config\.yaml; /, 'one line with the address, the config file and the runtime')
    const health = await fetch(`${serve.address}/api/health`)
    t.equal(health.status, 200)
    t.same(await health.json(), { status: 'ok' })
    serve.child.kill(signal)
    const { code } = await serve.exited
    t.equal(code, 0, `exit code 0 after ${signal}`)
    t.match(serve.output(), new RegExp(`${signal}: shutting down`))
    t.same(await processesWithMark(serve.mark), [], 'no process of this server is left')
    await t.rejects(fetch(`${serve.address}/api/health`), 'the port is closed')
  }
})

// The log is written in batches (core/base/log-stream.ts): a line still reaches stdout with nothing else logged after it
// (the server idle, nothing more asked: a line held for the next one would never come, and the test would time
// out), and none is lost on exit. How long it took is told, not judged: a busy machine takes its time.
t.test('serve: a request\'s log line reaches stdout while the server is idle; every line is out when the process exits on SIGTERM', async (t) => {
  const dir = await tempDir(t)
  const serve = await startServe(['--port', '0', '--models', join(dir, 'models')], { LLAMAGATE_HOME: dir, LLAMAGATE_LOG_LEVEL: 'info' })
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const requestLines = (): number => serve.output().split('\n').filter((line) => line.includes('"path":"/api/tags"')).length
  const asked = performance.now()
  await (await fetch(`${serve.address}/api/tags`)).text()
  await new Promise<void>((resolve) => {
    const check = (): void => { if (requestLines() === 1) { serve.child.stdout!.off('data', check); resolve() } }
    serve.child.stdout!.on('data', check)
    check()
  })
  t.comment(`its access log line came ${Math.round(performance.now() - asked)} ms after the request was sent`)
  t.equal(requestLines(), 1, 'the line came with nothing logged after it')
  // Twenty more, and the signal at once: their lines are still gathered when it comes.
  for (let i = 0; i < 20; i++) await (await fetch(`${serve.address}/api/tags`)).text()
  serve.child.kill('SIGTERM')
  t.equal((await serve.exited).code, 0)
  t.equal(requestLines(), 21, 'every request has its line')
  t.match(serve.output(), /drained: no request in flight/, 'and the shutdown\'s own lines came after them')
})

// One server for two facts: SIGTERM stops its llama-server too, and what the caller exported stays out of it.
t.test('serve: a server with a loaded model stops it on SIGTERM, no llama-server survives; what the caller exported (LLAMAGATE_*, HF_*) does not reach it', async (t) => {
  const exported = { LLAMAGATE_API_KEYS: 'from-the-shell', LLAMAGATE_PORT: '1', LLAMAGATE_LOG_LEVEL: 'trace', HF_ENDPOINT: 'http://nowhere.invalid' }
  const saved = Object.fromEntries(Object.keys(exported).map((name) => [name, process.env[name]]))
  Object.assign(process.env, exported)
  t.teardown(() => { for (const [name, value] of Object.entries(saved)) { if (value === undefined) delete process.env[name]; else process.env[name] = value } })
  const dir = await tempDir(t)
  const runtime = await cpuRuntime()
  const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nport: 0\nlog_level: info\nruntimes:\n  cpu: { bin: ${runtime.binDir} }\ndefault_options: { num_ctx: 256, num_parallel: 1, num_thread: 1 }\n`)
  const imported = await runCli(['import', 'acme/tiny', model, '--config', config])
  t.equal(imported.code, 0, imported.stderr)
  t.match(imported.stdout, /imported acme\/tiny/)
  const serve = await startServe(['--config', config], { LLAMAGATE_HOME: dir })
  t.teardown(() => { serve.child.kill('SIGKILL') })
  t.match(serve.output(), /runtime: cpu \(llama\.cpp /, 'the start line names the runtime')
  t.notMatch(serve.output(), /lacks llamagate's patches/, 'and no warning about patches: the tests\' runtime has them')
  const tags = await fetch(`${serve.address}/api/tags`)
  t.equal(tags.status, 200, 'no API key is asked for: LLAMAGATE_API_KEYS stayed behind')
  const environ = await readFile(`/proc/${serve.child.pid}/environ`, 'latin1')
  for (const name of Object.keys(exported)) t.notMatch(environ, new RegExp(`(^|\0)${name}=`), `${name} is not in its environment`)
  t.match(environ, /(^|\0)LLAMAGATE_HOME=/, 'what the test passes is')
  const res = await fetch(`${serve.address}/api/chat`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 2 } }) })
  t.equal(res.status, 200)
  const running = await processesWithMark(serve.mark)
  t.ok(running.length >= 2, 'the server and its llama-server are running')
  serve.child.kill('SIGTERM')
  t.equal((await serve.exited).code, 0)
  t.same(await processesWithMark(serve.mark), [], 'no llama-server survives the gateway')
})

t.test('serve: a bad config file stops the start with a clear message, not a stack trace', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'config.yaml')
  await writeFile(file, 'port: 99999\nlimits:\n  queue_lenght: 5\n')
  const result = await runCli(['serve', '--config', file])
  t.equal(result.code, 2)
  t.match(result.stderr, /port = 99999 is not allowed: must be <= 65535/)
  t.match(result.stderr, /limits\.queue_lenght is not a known key; allowed keys here: body_size, queue_length/)
  t.notMatch(result.stderr, /\n\s+at /)
})

t.test('serve: an ollama_listen address of the user\'s, in use, stops the start with a clear message (exit 2)', async (t) => {
  const dir = await tempDir(t)
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => taken.close())
  const port = (taken.address() as { port: number }).port
  const result = await runCli(['serve', '--port', '0', '--models', join(dir, 'models')], { LLAMAGATE_HOME: dir, LLAMAGATE_OLLAMA_LISTEN: `127.0.0.1:${port}` })
  t.equal(result.code, 2)
  t.equal(result.stderr, `llamagate serve: invalid configuration:\n  ollama_listen = "127.0.0.1:${port}": cannot listen there: the port is in use (another Ollama server, or llamagate already running?)\n`)
})

t.test('serve: bad flags and unknown commands are refused with usage', async (t) => {
  const badFlag = await runCli(['serve', '--prot', '1'])
  t.equal(badFlag.code, 2)
  t.match(badFlag.stderr, /Unknown option '--prot'/)
  t.match(badFlag.stderr, /usage: llamagate/)
  const badPort = await runCli(['serve', '--port', 'x'])
  t.equal(badPort.code, 2)
  t.match(badPort.stderr, /port = "x" is not allowed.*from command line/)
  const unknown = await runCli(['frobnicate'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command "frobnicate"/)
  const version = await runCli(['version'])
  t.equal(version.code, 0)
  t.match(version.stdout, /^\d+\.\d+\.\d+ \(Ollama API \d+\.\d+\.\d+\)\n$/, 'ours, then the Ollama API level it serves')
})
