// Model names that are JavaScript object keys: `constructor`, `__proto__` and every other name of
// Object.prototype, sent as a model to every route that takes one (keys off, with a key limited to some models),
// listed by an upstream, and written in config.yaml's `models:` and aliases. Each is a model name like any other:
// a clean 400, 403 or 404 in the route's own shape, or the upstream's model answered; never a 500, and never a
// broken /api/tags or /v1/models.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { FastifyInstance, HTTPMethods } from 'fastify'
import { loadConfig } from '../../core/platform/config.js'
import { hashSecret, writeKeysFile } from '../../plugins/security/keys-file.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../helpers/app.js'
import { routesOf, sampleUrl } from '../helpers/routes.js'
import { until } from '../helpers/until.js'
import { fakeUpstream, json } from '../plugins/upstreams/fake-upstream.js'

const NAMES = Object.getOwnPropertyNames(Object.prototype)

// The routes that name a model, in the body or the path; every other route must be in NO_MODEL, so that a route
// added later is decided here.
const MODEL_ROUTES = new Set([
  'POST /api/chat', 'POST /api/generate', 'POST /api/show', 'POST /api/copy', 'DELETE /api/delete', 'POST /api/create',
  'POST /api/pull', 'POST /api/import', 'POST /api/embed', 'POST /api/embeddings', 'POST /api/stop',
  'POST /v1/chat/completions', 'POST /v1/completions', 'POST /v1/responses', 'POST /v1/messages',
  'POST /v1/messages/count_tokens', 'POST /v1/embeddings', 'POST /v1/rerank', 'POST /v1/reranking', 'GET /v1/models/*',
  'POST /models/load', 'POST /models/unload', 'POST /v1/systemone', 'POST /v1/decisions',
  'POST /tokenize', 'POST /detokenize', 'POST /apply-template', 'POST /infill',
  'POST /v1/chat/completions/input_tokens', 'POST /v1/responses/input_tokens',
  'POST /v1/audio/transcriptions', 'POST /audio/transcriptions',
])
// Sent the names too (in the body's model fields): they must read none of them as anything but text.
const NO_MODEL = new Set([
  'GET /', 'GET /api/health', 'GET /api/hello', 'GET /api/version', 'GET /livez', 'GET /readyz', 'GET /ui', 'GET /ui/',
  'GET /ui/:file', 'GET /api/tags', 'GET /v1/models', 'GET /api/ps', 'GET /api/usage', 'GET /metrics', 'GET /api/runtimes',
  'GET /api/rpc-workers', 'GET /api/convert/status', 'GET /v1/responses', 'GET /v1/responses/:id', 'DELETE /v1/responses/:id',
  'POST /api/blobs/:digest', 'DELETE /api/blobs/:digest', 'GET /models',
  // Its model is in the query (?model=), which these calls do not send: the router's own /props.
  'GET /props',
  // The Batch APIs: a batch's lines name models, and run later through the routes above, as the batch's key.
  'POST /v1/files', 'GET /v1/files', 'GET /v1/files/:id', 'DELETE /v1/files/:id', 'GET /v1/files/:id/content',
  'POST /v1/batches', 'GET /v1/batches', 'GET /v1/batches/:id', 'POST /v1/batches/:id/cancel',
  'POST /v1/messages/batches', 'GET /v1/messages/batches', 'GET /v1/messages/batches/:id',
  'POST /v1/messages/batches/:id/cancel', 'GET /v1/messages/batches/:id/results',
])

const NARROW = 'lg-test-prototype-narrow-0123456789'
const NAMED = 'lg-test-prototype-named-00123456789'

// A body every model route reads as naming `model` in each of its model fields, and nothing else worth acting on.
const bodyFor = (model: string) => ({
  model, name: model, source: model, destination: model, from: model, path: '/nonexistent.gguf',
  messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', input: 'hi', query: 'hi', documents: ['a'], max_tokens: 1,
  questions: [{ type: 'predicate', instructions: 'hi' }],
})

type Shape = 'native' | 'openai' | 'anthropic' | 'llama-server'
// llama-server's own paths, and System One's as llama.cpp's server answers it.
const LLAMA_SERVER_PATHS = new Set(['/v1/systemone', '/tokenize', '/detokenize', '/apply-template', '/infill', '/props'])
const shapeOf = (url: string): Shape => LLAMA_SERVER_PATHS.has(url.split('?')[0]!) || url.startsWith('/models') ? 'llama-server' : url.startsWith('/v1/messages') ? 'anthropic' : url.startsWith('/v1/') || url === '/audio/transcriptions' ? 'openai' : 'native'

/** What is wrong with an error answer in `shape` (null: nothing). */
function shapeProblem (shape: Shape, body: unknown): string | null {
  const b = body as Record<string, any> | null
  if (shape === 'native') return typeof b?.error === 'string' ? null : 'not {"error": "..."}'
  if (shape === 'llama-server') return typeof b?.error?.message === 'string' && typeof b.error.type === 'string' && typeof b.error.code === 'number' ? null : 'not llama-server\'s {"error": {"code", "message", "type"}}'
  if (shape === 'openai') return typeof b?.error?.message === 'string' && typeof b.error.type === 'string' ? null : 'not OpenAI\'s {"error": {"message", "type", ...}}'
  return b?.type === 'error' && typeof b.error?.type === 'string' && typeof b.error.message === 'string' ? null : 'not Anthropic\'s {"type": "error", "error": {...}}'
}

interface Call { route: string, name: string, status: number, body: unknown }

/** Every route of `app` with every name, as `key` (none: no header); HEAD and OPTIONS are Fastify's own. */
async function sendAll (t: Test, app: FastifyInstance, key?: string): Promise<Call[]> {
  const routes = routesOf(app).filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
  const unknown = routes.map((r) => `${r.method} ${r.url}`).filter((r) => !MODEL_ROUTES.has(r) && !NO_MODEL.has(r))
  t.same(unknown, [], 'every route is known to take a model or not (a new route: decide here)')
  t.same([...MODEL_ROUTES].filter((r) => !routes.some((route) => `${route.method} ${route.url}` === r)), [], 'and every model route is one of the app\'s')
  const calls: Call[] = []
  for (const { method, url } of routes) {
    for (const name of NAMES) {
      const hasBody = method !== 'GET'
      const res = await app.inject({
        method: method as HTTPMethods,
        url: sampleUrl(url, name),
        headers: key !== undefined ? { authorization: `Bearer ${key}` } : {},
        ...(hasBody ? { payload: bodyFor(name) } : {}),
      })
      let body: unknown = res.body
      try { body = res.json() } catch {}
      calls.push({ route: `${method} ${url}`, name, status: res.statusCode, body })
    }
  }
  return calls
}

/** The calls that answered a 5xx (a probe's 503 aside: it says whether the server is ready, which it is not here). */
const failures = (calls: Call[]): string[] => calls
  .filter((c) => c.status >= 500 && c.route !== 'GET /readyz')
  .map((c) => `${c.route} ${c.name}: ${c.status} ${JSON.stringify(c.body).slice(0, 160)}`)

/** The model routes' answers that are not a 4xx in `allowed`, in the route's shape. */
function refusalProblems (calls: Call[], allowed: number[]): string[] {
  const problems: string[] = []
  for (const c of calls.filter((c) => MODEL_ROUTES.has(c.route))) {
    const url = c.route.slice(c.route.indexOf(' ') + 1)
    if (!allowed.includes(c.status)) problems.push(`${c.route} ${c.name}: ${c.status}, not ${allowed.join('/')}`)
    else {
      const problem = shapeProblem(shapeOf(url), c.body)
      if (problem !== null) problems.push(`${c.route} ${c.name}: ${problem}: ${JSON.stringify(c.body).slice(0, 160)}`)
    }
  }
  return problems
}

async function keysFile (t: Test): Promise<string> {
  const file = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(file, {
    keys: [
      // Names and an alias matched exactly (the path that read aliases from a plain object), and a pattern.
      { name: 'narrow', hash: hashSecret(NARROW), scopes: ['infer', 'manage'], models: ['acme/tiny', 'fast', 'acme/*'], limits: {}, created: '' },
      // A key given two of those names as its models.
      { name: 'named', hash: hashSecret(NAMED), scopes: ['infer'], models: ['constructor', '__proto__'], limits: {}, created: '' },
    ],
  })
  return file
}

/** acme/tiny stored (a tiny GGUF: nothing here starts a runtime), `fast` its alias. */
async function withTiny (app: FastifyInstance, t: Test): Promise<void> {
  const file = join(await tempDir(t), 'tiny.gguf')
  await writeTinyGguf({ file, name: 'acme/tiny' })
  await app.store.import('acme/tiny', file)
}

/** An OpenAI-compatible upstream listing every Object.prototype name and acme/remote; any other request: its 404. */
async function listingUpstream (t: Test) {
  return fakeUpstream(t, (req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      json(res, 200, { object: 'list', data: [...NAMES, 'acme/remote'].map((id) => ({ id, object: 'model', owned_by: 'box' })) })
    } else {
      json(res, 404, { error: { message: 'no such model here', type: 'invalid_request_error', code: 'model_not_found' } })
    }
  })
}

t.test('keys off: each name through every route is a clean 400 or 404, never a 500', async (t) => {
  const app = await buildTestApp(await testConfig(t, { hub: { endpoint: 'http://127.0.0.1:9' } }))
  t.teardown(() => app.close())
  const calls = await sendAll(t, app)
  t.ok(calls.length > NAMES.length * MODEL_ROUTES.size, `${calls.length} calls`)
  t.same(failures(calls), [], 'no 5xx')
  t.same(refusalProblems(calls, [400, 404]), [], 'a name that is no model: 400 (not a valid name) or 404, in the route\'s shape')
})

t.test('a key limited to some models: each name is a 403 in the route\'s shape; the lists still answer', async (t) => {
  const app = await buildTestApp(await testConfig(t, { auth: { keys_file: await keysFile(t) }, models: { 'acme/tiny': { aliases: ['fast'] } }}))
  t.teardown(() => app.close())
  await withTiny(app, t)
  const calls = await sendAll(t, app, NARROW)
  t.same(failures(calls), [], 'no 5xx')
  t.same(refusalProblems(calls, [403]), [], 'every model route refuses the name the key may not use')
  t.match(calls.find((c) => c.route === 'POST /api/chat' && c.name === 'constructor')!.body, { error: 'the API key "narrow" may not use model "constructor"' })
  for (const url of ['/api/tags', '/v1/models', '/api/ps']) {
    const res = await app.inject({ url, headers: { authorization: `Bearer ${NARROW}` } })
    t.equal(res.statusCode, 200, url)
  }
})

t.test('an upstream listing every name: the lists hold for every key, each name is the upstream\'s model', async (t) => {
  const upstream = await listingUpstream(t)
  const app = await buildTestApp(await testConfig(t, {
    auth: { keys_file: await keysFile(t) },
    upstreams: [{ name: 'box', url: upstream.origin, kind: 'openai' }],
    models: { 'acme/tiny': { aliases: ['fast'] } },
    hub: { endpoint: 'http://127.0.0.1:9' },
  }))
  t.teardown(() => app.close())
  await withTiny(app, t)
  const as = (key: string, url: string) => app.inject({ url, headers: { authorization: `Bearer ${key}` } })
  await until('the upstream\'s models listed', async () => ((await as(NAMED, '/api/tags')).json() as { models: unknown[] }).models.length > 0)

  // One such name once broke these for every key limited to some models.
  const tags = await as(NARROW, '/api/tags')
  t.equal(tags.statusCode, 200)
  t.same((tags.json() as { models: Array<{ name: string }> }).models.map((m) => m.name).sort(), ['acme/remote', 'acme/tiny'], '/api/tags: the key\'s models only')
  const models = await as(NARROW, '/v1/models')
  t.equal(models.statusCode, 200)
  t.same((models.json() as { data: Array<{ id: string }> }).data.map((m) => m.id).sort(), ['acme/remote', 'acme/tiny', 'fast'])
  const anthropic = await app.inject({ url: '/v1/models', headers: { authorization: `Bearer ${NARROW}`, 'anthropic-version': '2023-06-01' } })
  t.equal(anthropic.statusCode, 200, 'Anthropic\'s list too')
  const named = (await as(NAMED, '/v1/models')).json() as { data: Array<{ id: string }> }
  t.same(named.data.map((m) => m.id).sort(), ['__proto__', 'constructor'], 'a key given `constructor` and `__proto__` sees those two')
  t.equal((await as(NAMED, '/v1/models/constructor')).statusCode, 200, 'and reads one')
  t.equal((await as(NAMED, '/v1/models/toString')).statusCode, 403, 'not another')

  const narrowCalls = await sendAll(t, app, NARROW)
  t.same(failures(narrowCalls), [], 'the limited key: no 5xx')
  t.same(refusalProblems(narrowCalls, [403]), [], 'the limited key: 403 on every model route')

  // Keys off, each name is the upstream's model: its answer (a 404 here), or the route's own 4xx, never a 500.
  const open = await buildTestApp(await testConfig(t, { upstreams: [{ name: 'box', url: upstream.origin, kind: 'openai' }], hub: { endpoint: 'http://127.0.0.1:9' } }))
  t.teardown(() => open.close())
  await until('listed with keys off', async () => ((await open.inject({ url: '/api/tags' })).json() as { models: unknown[] }).models.length === NAMES.length + 1)
  const openCalls = await sendAll(t, open)
  t.same(failures(openCalls), [], 'keys off: no 5xx')
  t.same(refusalProblems(openCalls.filter((c) => c.route !== 'GET /v1/models/*' && c.route !== 'POST /api/show'), [400, 404]), [], 'keys off: the upstream\'s 404, or the route\'s 400')
  for (const name of NAMES) {
    const shown = await open.inject({ url: `/v1/models/${name}` })
    t.match({ status: shown.statusCode, body: shown.json() }, { status: 200, body: { id: name, owned_by: 'box' } }, `/v1/models/${name}: the upstream's`)
  }
})

t.test('config.yaml: models and aliases named after Object.prototype keys', async (t) => {
  const dir = await tempDir(t)
  const upstream = await listingUpstream(t)
  const file = join(dir, 'config.yaml')
  await writeFile(file, [
    `data_dir: ${dir}`, 'log_level: silent', 'build_gpu_runtime: false', 'ollama_listen: off',
    `upstreams: [{ name: box, url: "${upstream.origin}", kind: openai }]`,
    'models:',
    '  constructor: { options: { temperature: 0.25 } }',
    '  __proto__: { options: { temperature: 0.5 } }',
    '  acme/tiny: { aliases: [toString, __proto__, hasOwnProperty] }', '',
  ].join('\n'))
  const config = loadConfig({ config: file }, {})
  t.equal(({} as Record<string, unknown>).options, undefined, 'a model named __proto__ reaches no object\'s prototype')
  t.same(config.models.get('constructor'), { options: { temperature: 0.25 } })
  t.same(config.models.get('__proto__'), { options: { temperature: 0.5 } })
  t.equal(config.models.get('valueOf'), undefined, 'a name not configured is nothing')
  t.same([...config.aliases], [['tostring', 'acme/tiny'], ['__proto__', 'acme/tiny'], ['hasownproperty', 'acme/tiny']])
  t.equal(config.aliases.get('isprototypeof'), undefined)

  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  await withTiny(app, t)
  await until('the upstream\'s models listed', async () => ((await app.inject({ url: '/api/tags' })).json() as { models: unknown[] }).models.length > 1)
  const show = async (model: string) => {
    const res = await app.inject({ method: 'POST', url: '/api/show', payload: { model } })
    return { status: res.statusCode, body: res.json() as { parameters?: string, details?: { format?: string } } }
  }
  t.match(await show('constructor'), { status: 200, body: { parameters: /temperature\s+0\.25/ } }, 'the upstream\'s constructor, with config.yaml\'s options for it')
  t.match(await show('__proto__'), { status: 200, body: { details: { format: 'gguf' } } }, 'an alias of a stored model wins over an upstream\'s name')
  t.match(await show('toString'), { status: 200, body: { details: { format: 'gguf' } } }, 'an alias, in any case')
  t.match(await show('valueOf'), { status: 200, body: { details: { format: 'remote' } } }, 'a name neither configured nor an alias: the upstream\'s')
  const ids = ((await app.inject({ url: '/v1/models' })).json() as { data: Array<{ id: string }> }).data.map((m) => m.id)
  for (const alias of ['toString', '__proto__', 'hasOwnProperty']) t.ok(ids.some((id) => id.toLowerCase() === alias.toLowerCase()), `/v1/models lists the alias ${alias}`)
})
