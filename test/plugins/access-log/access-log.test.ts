import { Writable } from 'node:stream'
import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../../../core/server/app.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir, testConfig } from '../../helpers/app.js'
import { post } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// One access log line per request, on a real server and llama-server: what an admin greps at 3 a.m.

interface Line { level: number, msg: string, reqId?: string, method?: string, path?: string, surface?: string, model?: string | null, status?: number, ms?: number, ttftMs?: number, promptTokens?: number, generatedTokens?: number, clientGone?: boolean }

t.test('a line per request: id, surface, model, status, duration, first token and tokens; a client that leaves is said so', async (t) => {
  const lines: Line[] = []
  const stream = new Writable({ write (chunk, _enc, done) { for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line); done() } })
  const runtime = await cpuRuntime()
  const config = await testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, default_options: { num_ctx: 4096, num_parallel: 2, max_tokens: 8, ignore_eos: true } })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  await app.store.import('acme/tiny', (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf'), nCtxTrain: 4096 })).file)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const requests = (): Line[] => lines.filter((l) => l.msg === 'request' || l.msg.startsWith('request ended'))

  const streamed = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }] }, { accept: 'application/x-ndjson' })
  const events = (await streamed.text()).trim().split('\n').map((l) => JSON.parse(l) as { done: boolean, eval_count?: number, prompt_eval_count?: number })
  const done = events.at(-1)!
  const whole = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 })
  const usage = (await whole.json() as { usage: { prompt_tokens: number, completion_tokens: number } }).usage
  t.equal((await post(`${url}/api/chat`, { model: 'acme/nobody', messages: [] })).status, 404)
  t.equal((await fetch(`${url}/readyz`)).status, 200)
  t.equal((await fetch(`${url}/api/hello`, { method: 'HEAD' })).status, 200)
  t.equal((await fetch(`${url}/api/version`)).status, 200)
  t.equal((await fetch(`${url}/metrics`)).status, 200)
  await until('three lines', () => requests().length >= 3)

  const [chat, openai, missing] = requests()
  t.match(chat, { level: 30, method: 'POST', path: '/api/chat', surface: 'native', model: 'acme/tiny', status: 200, promptTokens: done.prompt_eval_count, generatedTokens: 8 })
  t.type(chat!.reqId, 'string', 'with the request id')
  t.ok(chat!.ttftMs! > 0 && chat!.ttftMs! <= chat!.ms!, `time to first token ${chat!.ttftMs} ms within the request's ${chat!.ms} ms`)
  t.match(openai, { path: '/v1/chat/completions', surface: 'openai', model: 'acme/tiny', status: 200, promptTokens: usage.prompt_tokens, generatedTokens: usage.completion_tokens })
  t.match(missing, { surface: 'native', model: 'acme/nobody', status: 404 })
  t.notOk('promptTokens' in missing!, 'no tokens for a request that used no model')
  const probes = ['/readyz', '/api/hello', '/api/version', '/metrics']
  t.notOk(lines.some((l) => probes.includes(l.path!)), 'probes and scrapes are not logged')

  // Each surface hands its request's record to the lease it takes (request.usage): its line has the lease's tokens.
  const surfaces: Array<[string, Record<string, unknown>]> = [
    ['/api/generate', { model: 'acme/tiny', prompt: 'hi', stream: false }],
    ['/v1/completions', { model: 'acme/tiny', prompt: 'hi', max_tokens: 3 }],
    ['/v1/responses', { model: 'acme/tiny', input: 'hi', max_output_tokens: 3 }],
    ['/v1/messages', { model: 'acme/tiny', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }],
    ['/api/embed', { model: 'acme/tiny', input: 'hi' }],
  ]
  for (const [path, body] of surfaces) t.equal((await post(`${url}${path}`, body)).status, 200, path)
  await until('a line for each surface', () => surfaces.every(([path]) => requests().some((l) => l.path === path)))
  for (const [path] of surfaces) {
    const line = requests().find((l) => l.path === path)!
    t.ok(line.promptTokens! > 0, `${path}: ${line.promptTokens} prompt tokens, counted by its lease`)
  }

  // A client that goes away mid-answer: a long answer, cut after its first event.
  const controller = new AbortController()
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'long' }], options: { num_predict: 3000 } }, { accept: 'application/x-ndjson' }, controller.signal)
  const reader = res.body!.getReader()
  await reader.read()
  controller.abort()
  const gone = await until('the line of the request whose client left', () => requests().find((l) => l.clientGone))
  t.match(gone, { level: 30, msg: 'request ended: the client went away', path: '/api/chat', model: 'acme/tiny' })
  t.notOk(lines.some((l) => l.level >= 50), 'nothing at error level')
})

t.test('refusals have their lines: 401 without a key, 403 for a foreign origin', async (t) => {
  const lines: Line[] = []
  const stream = new Writable({ write (chunk, _enc, done) { for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line); done() } })
  const config = await testConfig(t, { auth: { api_keys: ['sk-access-log-test-0123456789'] } })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.equal((await post(`${url}/api/chat`, { model: 'acme/x', messages: [] })).status, 401)
  t.equal((await fetch(`${url}/api/tags`, { headers: { origin: 'https://evil.example', authorization: 'Bearer sk-access-log-test-0123456789' } })).status, 403)
  const refused = await until('two lines', () => { const found = lines.filter((l) => l.msg === 'request'); return found.length >= 2 ? found : null })
  t.match(refused, [{ method: 'POST', path: '/api/chat', status: 401 }, { method: 'GET', path: '/api/tags', status: 403 }])
})
