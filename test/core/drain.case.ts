import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../helpers/app.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { processesWithMark, runCliHere, startServe, type ServeProcess } from '../helpers/serve-process.js'
import { until } from '../helpers/until.js'

// Readiness, preloading and the graceful drain on a real `llamagate serve` process with a real llama-server:
// what Kubernetes (or systemd, or a person with Ctrl-C) sees.

let imported: Promise<{ models: string, code: number | null, stderr: string }> | undefined

/**
 * The models folder every server of this file reads (each has a data folder of its own): a tiny model trained on
 * 32k tokens of context (for long answers), imported once by the CLI's import.
 */
function tinyModels (): Promise<{ models: string, code: number | null, stderr: string }> {
  imported ??= (async () => {
    const dir = await tempDir(t)
    const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf'), nCtxTrain: 32_768 })).file
    const models = join(dir, 'models')
    // In this process (the serve processes are the test), on a config of its own rather than this home's.
    const config = join(dir, 'import.yaml')
    await writeFile(config, `data_dir: ${dir}\n`)
    const { code, stderr } = await runCliHere(['import', 'acme/tiny', model, '--config', config, '--models', models])
    return { models, code, stderr }
  })()
  return imported
}

/**
 * A serve process on a config of its own with the file's tiny model. `numCtx`: its default context, the one a
 * long answer asks for, so that the answer runs on the instance a preload made.
 */
async function serveWith (t: Test, config: string, numCtx = 256): Promise<ServeProcess> {
  const dir = await tempDir(t)
  const runtime = await cpuRuntime()
  const { models, code, stderr } = await tinyModels()
  t.equal(code, 0, stderr)
  const file = join(dir, 'config.yaml')
  await writeFile(file, `data_dir: ${dir}\nmodels_dir: ${models}\nport: 0\nlog_level: info\nruntimes:\n  cpu: { bin: ${runtime.binDir} }\ndefault_options: { num_ctx: ${numCtx}, num_parallel: 2, num_thread: 1 }\n${config}`)
  const serve = await startServe(['--config', file], {}, 60_000)
  t.teardown(() => { serve.child.kill('SIGKILL') })
  return serve
}

interface ChatEvent { done?: boolean, eval_count?: number, error?: string }

/**
 * A long streamed answer (its num_ctx `tokens` + 256): resolves with its first event once it arrives, and with all
 * of them at the end.
 */
async function longAnswer (address: string, tokens: number, headers: Record<string, string> = {}): Promise<{ first: ChatEvent, all: Promise<ChatEvent[]> }> {
  const res = await fetch(`${address}/api/chat`, {
    method: 'POST',
    headers: { accept: 'application/x-ndjson', ...headers },
    body: JSON.stringify({ model: 'acme/tiny', messages: [{ role: 'user', content: 'go on' }], options: { num_ctx: tokens + 256, num_predict: tokens, ignore_eos: true } }),
  })
  if (res.status !== 200) throw new Error(`the long answer got ${res.status}: ${await res.text()}`)
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const events: ChatEvent[] = []
  let buffer = ''
  const readMore = async (): Promise<boolean> => {
    const { value, done } = await reader.read()
    if (done) return false
    buffer += value
    const lines = buffer.split('\n')
    buffer = lines.pop()!
    for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as ChatEvent)
    return true
  }
  while (events.length === 0) if (!await readMore()) break
  const first = events[0]!
  const all = (async () => { while (await readMore()); return events })()
  return { first, all }
}

const chat = (address: string): Promise<Response> => fetch(`${address}/api/chat`, {
  method: 'POST', body: JSON.stringify({ model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } }),
})

// Each server below is fresh: its start (the preloads, readiness) is checked first, then its drain.

t.test('a preload that fails keeps the server not ready; a drain past its timeout cuts the answer', async (t) => {
  const key = { authorization: 'Bearer sekret' }
  const serve = await serveWith(t, 'models:\n  acme/tiny: { preload: true }\n  acme/ghost: { preload: true }\nauth:\n  api_keys: [sekret]\nshutdown:\n  drain_timeout: 1s\n', 256 + 30_000)

  await t.test('/livez and /readyz: ready only once the preloads are loaded; a preload that fails keeps it not ready, saying why', async (t) => {
    const live = await fetch(`${serve.address}/livez`)
    t.equal(live.status, 200, '/livez answers without a key')
    t.same(await live.json(), { status: 'alive' })
    const reasons = await until('acme/tiny preloaded', async () => {
      // The reasons in full go to a key holder (a probe without the key is told only what kind of thing is wrong).
      const res = await fetch(`${serve.address}/readyz`, { headers: key })
      const body = await res.json() as { status: string, reasons: string[] }
      t.equal(res.status, 503, 'never ready while acme/ghost cannot load')
      return body.reasons.some((r) => r.includes('acme/tiny')) ? null : body.reasons
    }, 60_000)
    t.same(reasons, ['preloading acme/ghost failed 1 time(s), trying again shortly: model "acme/ghost" not found, pull it first'], 'the one reason left, with the error')
    const probe = await fetch(`${serve.address}/readyz`)
    t.equal(probe.status, 503, 'a probe without the key: not ready as well')
    t.same((await probe.json() as { reasons: string[] }).reasons, ['models named for preloading are not loaded yet (details with an API key)'], 'without the model\'s name or the error')
    const ps = await (await fetch(`${serve.address}/api/ps`, { headers: key })).json() as { models: Array<{ name: string, expires_at: string }> }
    t.equal(ps.models.length, 1)
    t.equal(ps.models[0]!.name, 'acme/tiny', 'the preloaded model is loaded before readiness stops naming it')
    t.ok(Date.parse(ps.models[0]!.expires_at) > Date.now() + 50 * 365 * 24 * 3600_000, `and kept for good: expires_at ${ps.models[0]!.expires_at}`)
    t.match(serve.output(), /preloading acme\/ghost failed: model \\"acme\/ghost\\" not found/, 'the failure is logged')
  })

  await t.test('a drain that runs past shutdown.drain_timeout cuts the answer with an error event; exit 0, nothing left', async (t) => {
    const answer = await longAnswer(serve.address, 30_000, key)
    const signalled = Date.now()
    serve.child.kill('SIGTERM')
    const events = await answer.all
    t.ok(Date.now() - signalled < 15_000, `cut ${Date.now() - signalled} ms after SIGTERM`)
    t.match(events.at(-1), { error: /shutting down/ }, 'the stream ends with an error event')
    t.equal((await serve.exited).code, 0)
    t.match(serve.output(), /drain timeout \(1 s\): cutting what is left/)
    t.same(await processesWithMark(serve.mark), [], 'no llama-server left')
  })
})

t.test('a preload with its own keep-alive makes the server ready; SIGTERM then lets the answer under way complete', async (t) => {
  const tokens = 3000
  const serve = await serveWith(t, 'models:\n  acme/tiny: { preload: true, keep_alive: 10m }\nshutdown:\n  drain_timeout: 60s\n', 256 + tokens)

  await t.test('/readyz is ready once a preload with its own keep-alive is done', async (t) => {
    await until('ready', async () => (await fetch(`${serve.address}/readyz`)).status === 200, 60_000)
    t.same(await (await fetch(`${serve.address}/readyz`)).json(), { status: 'ready', reasons: [] })
    const ps = await (await fetch(`${serve.address}/api/ps`)).json() as { models: Array<{ expires_at: string }> }
    const left = Date.parse(ps.models[0]!.expires_at) - Date.now()
    t.ok(left > 9 * 60_000 && left <= 10 * 60_000, `keep_alive 10m: expires in ${Math.round(left / 1000)} s`)
  })

  await t.test('SIGTERM during a streamed answer: not ready at once, new work 503, the answer completes, exit 0, nothing left', async (t) => {
    // A client's spare connection that never sends a byte: Node's closeIdleConnections leaves it, and once the answer
    // had drained the close waited for it, for ever.
    const spare = connect(Number(new URL(serve.address).port), '127.0.0.1')
    spare.on('error', () => {})
    await once(spare, 'connect')
    t.teardown(() => { spare.destroy() })
    const answer = await longAnswer(serve.address, tokens)
    t.equal(answer.first.done, false, 'the answer is under way')
    serve.child.kill('SIGTERM')
    await until('draining', () => /draining: new work is refused/.test(serve.output()), 10_000)

    const ready = await fetch(`${serve.address}/readyz`)
    t.equal(ready.status, 503, '/readyz turns 503 at once')
    t.same(await ready.json(), { status: 'not ready', reasons: ['draining: the server is shutting down'] })
    t.equal((await fetch(`${serve.address}/livez`)).status, 200, '/livez still answers')
    const refused = await chat(serve.address)
    t.equal(refused.status, 503, 'a new answer is refused')
    t.equal(refused.headers.get('retry-after'), '5', 'with Retry-After')
    t.match(await refused.json(), { error: /shutting down and takes no new work/ })
    const openai = await fetch(`${serve.address}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }] }) })
    t.equal(openai.status, 503)
    t.match(await openai.json(), { error: { code: 'draining' } }, 'in each surface\'s own error shape')
    t.equal((await fetch(`${serve.address}/api/tags`)).status, 200, 'reading what is there still works')

    const events = await answer.all
    const last = events.at(-1)!
    t.notOk(events.some((e) => e.error), 'no error event')
    t.equal(last.done, true, 'the answer ran to its end')
    t.equal(last.eval_count, tokens, `all ${tokens} tokens`)
    await until('the gateway exited, the silent connection not waited for', () => serve.child.exitCode !== null, 20_000)
    t.equal((await serve.exited).code, 0, 'exit code 0')
    t.match(serve.output(), /drained: no request in flight/)
    t.same(await processesWithMark(serve.mark), [], 'no llama-server left')
  })
})

t.test('a second SIGTERM cuts the drain short', async (t) => {
  const serve = await serveWith(t, 'shutdown:\n  drain_timeout: 60s\n')
  const answer = await longAnswer(serve.address, 30_000)
  serve.child.kill('SIGTERM')
  await until('draining', () => /draining: new work is refused/.test(serve.output()), 10_000)
  serve.child.kill('SIGTERM')
  const events = await answer.all
  t.match(events.at(-1), { error: /shutting down/ }, 'the stream ends with an error event')
  t.equal((await serve.exited).code, 0)
  t.match(serve.output(), /SIGTERM while draining: cutting the requests in flight/)
  t.same(await processesWithMark(serve.mark), [], 'no llama-server left')
})
