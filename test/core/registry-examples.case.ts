import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../core/platform/config.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { exampleSource, installPlugin, projectDir } from '../helpers/example-plugin.js'
import { sharedServer } from '../helpers/inference.js'
import { runCliHere } from '../helpers/serve-process.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The registries' examples as a third party installs them: docs/examples/echo-backend-plugin.ts (a backend of one's
// own, app.backends) and docs/examples/folder-source-plugin.ts (a model source, app.modelSources), type-checked
// against the published types, installed beside config.yaml and loaded by name into one gateway for the file.

const ECHO = 'echo-backend-plugin.ts'
const FOLDER = 'folder-source-plugin.ts'

/** The gateway of `dir/config.yaml`, its `plugins:` list (YAML lines) and `more` keys. */
async function startFromConfig (dir: string, plugins: string, dataDir: string, more: string): Promise<FastifyInstance> {
  await writeFile(join(dir, 'config.yaml'), `data_dir: ${dataDir}\nlog_level: silent\n${more}plugins:\n${plugins}`)
  return buildTestApp(loadConfig({ config: join(dir, 'config.yaml') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
}

const gateway = sharedServer(async () => {
  const dir = await projectDir(t)
  await installPlugin(dir, 'llamagate-plugin-echo', await exampleSource(ECHO))
  await installPlugin(dir, 'llamagate-plugin-folder-source', await exampleSource(FOLDER))
  const shelf = join(dir, 'shelf')
  await mkdir(shelf)
  await writeTinyGguf({ file: join(shelf, 'tiny.gguf'), seed: 3 })
  await copyFile(join(shelf, 'tiny.gguf'), join(shelf, 'tiny2.gguf'))
  await copyFile(join(shelf, 'tiny.gguf'), join(shelf, 'tiny3.gguf'))
  const runtime = await cpuRuntime()
  const more = `build_gpu_runtime: false\nruntime: cpu\nruntimes: { cpu: { bin: ${runtime.binDir} } }\ndefault_options: { num_thread: 1, num_ctx: 512, num_parallel: 1, ignore_eos: true }\n`
  const app = await startFromConfig(dir, `  - path: llamagate-plugin-echo\n    options: { models: [echo/parrot] }\n  - path: llamagate-plugin-folder-source\n    options: { dir: ${shelf} }\n`, await tempDir(t), more)
  t.teardown(() => app.close())
  return { app, shelf }
})

/** The text a surface's answer carries, whole or streamed (SSE or NDJSON), whatever its API. */
function answerText (payload: string): string {
  const parts: string[] = []
  for (const line of payload.split('\n')) {
    const data = line.startsWith('data: ') ? line.slice(6) : line
    if (!data.startsWith('{')) continue
    const e = JSON.parse(data) as Record<string, any>
    // Named events (Responses', Anthropic's): only their text's deltas; whole answers: their text.
    if (e.type === 'response.output_text.delta') parts.push(e.delta)
    else if (e.type === 'content_block_delta') parts.push(e.delta.text)
    else if (e.type === 'message') parts.push(e.content[0].text)
    else if (e.object === 'response') parts.push(e.output.find((o: any) => o.type === 'message').content[0].text)
    else if (e.type === undefined) {
      parts.push(e.message?.content ?? e.response ?? e.choices?.[0]?.delta?.content ?? e.choices?.[0]?.message?.content ?? e.choices?.[0]?.text ?? '')
    }
  }
  return parts.join('')
}

const SAID = 'hello there'
const SURFACES: Array<[string, Record<string, unknown>]> = [
  ['/api/chat', { messages: [{ role: 'user', content: SAID }] }],
  ['/api/generate', { prompt: SAID }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: SAID }] }],
  ['/v1/completions', { prompt: SAID }],
  ['/v1/responses', { input: SAID }],
  ['/v1/messages', { max_tokens: 64, messages: [{ role: 'user', content: SAID }] }],
]

async function ask (app: FastifyInstance, url: string, body: Record<string, unknown>): Promise<Awaited<ReturnType<typeof app.inject>>> {
  return await app.inject({ method: 'POST', url, payload: body })
}

t.test('the echo backend answers on every inference surface, whole and streamed, and is listed', async (t) => {
  const { app } = await gateway()
  for (const [url, body] of SURFACES) {
    for (const stream of [false, true]) {
      const res = await ask(app, url, { model: 'echo/parrot', stream, ...body })
      t.equal(res.statusCode, 200, `${url} ${stream ? 'streamed' : 'whole'}: ${res.payload.slice(0, 300)}`)
      t.equal(answerText(res.payload), `echo: ${SAID}`, `${url} ${stream ? 'streamed' : 'whole'}`)
    }
  }
  // Booked as a local model's requests are: each, with the tokens the backend said it read and wrote.
  const booked = (await app.inject({ url: '/api/usage' })).json().keys[0].models.find((m: { model: string }) => m.model === 'echo/parrot')
  t.match(booked, { requests: SURFACES.length * 2 }, 'every request in the usage records')
  t.ok(booked.generated_tokens >= SURFACES.length * 2 * 3, `its tokens counted (${booked.generated_tokens})`)
  // A limit cuts it as a model's would, and says so.
  const cut = (await ask(app, '/v1/chat/completions', { model: 'echo/parrot', messages: [{ role: 'user', content: SAID }], max_tokens: 2 })).json()
  t.same([cut.choices[0].message.content, cut.choices[0].finish_reason], ['echo: hello ', 'length'])
  t.ok((await ask(app, '/api/show', { model: 'echo/parrot' })).statusCode === 200, '/api/show knows it')
  t.ok((await app.inject({ url: '/api/tags' })).json().models.some((m: { name: string }) => m.name === 'echo/parrot'), 'in /api/tags')
  t.ok((await app.inject({ url: '/v1/models' })).json().data.some((m: { id: string }) => m.id === 'echo/parrot'), 'in /v1/models')
})

t.test('a backend that throws or hangs fails only its own request, in its surface\'s shape, naming the backend and the bound', async (t) => {
  const { app } = await gateway()
  app.backends.add({ name: 'thrower', models: () => ['bad/throws'], fetch: async () => { throw new Error('the GPU box is on fire') } })
  // It never answers, and never heeds its signal: the bound still ends the request.
  app.backends.add({ name: 'hanger', models: () => ['bad/hangs'], timeoutMs: 150, fetch: () => new Promise<Response>(() => {}) })
  // It begins a stream, then goes silent.
  app.backends.add({
    name: 'staller',
    models: () => [],
    claims: (model) => model.startsWith('stall/'),
    timeoutMs: 150,
    fetch: async () => new Response(new ReadableStream({ start (c) { c.enqueue(new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{"content":"so"},"finish_reason":null}]}\n\n')) } })),
  })
  app.backends.add({ name: 'empty', models: () => ['bad/empty'], fetch: async () => undefined as unknown as Response })
  t.throws(() => app.backends.add({ name: 'echo', models: () => [], fetch: async () => new Response('') }), /the name "echo" is taken/)
  t.throws(() => app.backends.add({ name: 'quick', models: () => [], timeoutMs: 0, fetch: async () => new Response('') }), /backend "quick": timeoutMs must be a whole number of at least 1/)
  const empty = await ask(app, '/v1/completions', { model: 'bad/empty', prompt: 'hi' })
  t.equal(empty.statusCode, 502)
  t.match(empty.json(), { error: { message: /backend "empty" .*its fetch\(\) resolved with no Response/ } })
  const thrown = await ask(app, '/v1/chat/completions', { model: 'bad/throws', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(thrown.statusCode, 502)
  t.match(thrown.json(), { error: { message: /^backend "thrower" is unavailable for model "bad\/throws": it threw: the GPU box is on fire$/ } }, 'OpenAI\'s shape')
  const native = await ask(app, '/api/chat', { model: 'bad/throws', messages: [{ role: 'user', content: 'hi' }], stream: false })
  t.equal(native.statusCode, 502)
  t.match(native.json(), { error: /backend "thrower" .*it threw: the GPU box is on fire/ }, 'the native shape')
  const anthropic = await ask(app, '/v1/messages', { model: 'bad/hangs', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(anthropic.statusCode, 502)
  t.match(anthropic.json(), { type: 'error', error: { message: /backend "hanger" .*it sent nothing for 150 ms \(its timeoutMs\)/ } }, 'Anthropic\'s shape, the bound named')
  const stalled = await ask(app, '/v1/chat/completions', { model: 'stall/x', messages: [{ role: 'user', content: 'hi' }], stream: true })
  t.equal(stalled.statusCode, 200, 'the stream had begun')
  t.match(stalled.payload, /"content":"so"/)
  t.match(stalled.payload, /data: \{"error":\{.*it sent nothing for 150 ms \(its timeoutMs\)/, 'it ends with an error event')
  const fine = await ask(app, '/v1/chat/completions', { model: 'echo/parrot', messages: [{ role: 'user', content: 'still here' }] })
  t.equal(fine.json().choices[0].message.content, 'echo: still here', 'the other backends answer on')
})

t.test('the folder source answers /api/pull, streamed and whole; the model is then listed and runs', async (t) => {
  const { app } = await gateway()
  const streamed = await ask(app, '/api/pull', { model: 'folder/tiny' })
  t.equal(streamed.statusCode, 200)
  const events = streamed.payload.split('\n').filter((l) => l.startsWith('data: ') || l.startsWith('{')).map((l) => JSON.parse(l.replace(/^data: /, '')) as Record<string, unknown>)
  t.match(events[0], { status: 'pulling folder/tiny from folder' })
  const copied = events.filter((e) => e.status === 'copying tiny.gguf')
  t.ok(copied.length >= 2, 'progress as it copies')
  t.match(copied.at(-1), { digest: 'tiny.gguf', total: Number, completed: copied.at(-1)!.total })
  t.match(events.at(-1), { status: 'success' })
  t.same((await ask(app, '/api/pull', { model: 'folder/tiny2', stream: false })).json(), { status: 'success' }, 'whole')
  const names = (await app.inject({ url: '/api/tags' })).json().models.map((m: { name: string }) => m.name)
  t.ok(names.includes('folder/tiny') && names.includes('folder/tiny2'), `listed: ${names.join(', ')}`)
  const ran = await ask(app, '/api/generate', { model: 'folder/tiny', prompt: 'hi', stream: false, options: { num_predict: 2 } })
  t.equal(ran.statusCode, 200)
  t.equal(ran.json().eval_count, 2, 'it runs')
})

t.test('llamagate pull asks the folder source through the server, with its progress', async (t) => {
  const { app } = await gateway()
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const { code, stdout, stderr } = await runCliHere(['pull', 'folder/tiny3', '--host', url])
  t.equal(code, 0, stderr)
  t.match(stderr, /pulling folder\/tiny3 from folder/)
  t.match(stderr, /tiny3\.gguf/, 'its progress, by file')
  t.match(stdout, /folder\/tiny3/)
  t.ok(app.store.find('folder/tiny3'), 'stored')
})

t.test('a source that throws, hangs, or has no such model, gives a clean error naming it', async (t) => {
  const { app } = await gateway()
  app.modelSources.add({ name: 'broken', claims: (model) => model.startsWith('broken/'), pull: async () => { throw new Error('the share is unmounted') } })
  const missing = await ask(app, '/api/pull', { model: 'folder/nothing-here', stream: false })
  t.equal(missing.statusCode, 404)
  t.match(missing.json(), { error: /folder\/nothing-here/ })
  const thrown = await ask(app, '/api/pull', { model: 'broken/model', stream: false })
  t.equal(thrown.statusCode, 502)
  t.same(thrown.json(), { error: 'model source "broken": it failed to pull broken/model: the share is unmounted' })
  const streamed = await ask(app, '/api/pull', { model: 'broken/model' })
  t.match(streamed.payload, /"error":"model source \\"broken\\": it failed to pull broken\/model: the share is unmounted"/, 'streamed: an error event')
  // It never tells a step nor heeds its signal: the bound ends the pull.
  app.modelSources.add({ name: 'silent', timeoutMs: 150, claims: (model) => model.startsWith('silent/'), pull: () => new Promise<string>(() => {}) })
  const hung = await ask(app, '/api/pull', { model: 'silent/model', stream: false })
  t.equal(hung.statusCode, 502)
  t.same(hung.json(), { error: 'model source "silent": it told nothing of its pull of silent/model for 150 ms (its timeoutMs)' })
  t.throws(() => app.modelSources.add({ name: 'folder', claims: () => false, pull: async () => '' }), /"folder" is taken/)
})
