// Keys with scopes: every route the app has is walked with a key of each scope, so a route added later
// either is in SCOPES below (and is checked) or fails this test; a route that declares no scope needs admin.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig } from '../../../core/platform/config.js'
import { hashSecret, writeKeysFile, type Scope } from '../../../plugins/security/keys-file.js'
import { openStore } from '../../../plugins/storage/open-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { buildTestApp, build, tempDir, testConfig } from '../../helpers/app.js'
import { routesOf, sampleUrl } from '../../helpers/routes.js'

type RouteScope = Scope | 'any' | 'public'

// What each route needs. `any`: any valid key (the lists, shown filtered; a key's own usage).
const SCOPES: Record<string, RouteScope> = {
  'GET /': 'public', 'GET /api/health': 'public', 'GET /api/hello': 'public', 'GET /api/version': 'public',
  'GET /livez': 'public', 'GET /readyz': 'public', 'GET /ui': 'public', 'GET /ui/': 'public', 'GET /ui/:file': 'public',
  'POST /api/chat': 'infer', 'POST /api/generate': 'infer', 'POST /api/embed': 'infer', 'POST /api/embeddings': 'infer',
  'POST /v1/embeddings': 'infer', 'POST /v1/rerank': 'infer', 'POST /v1/reranking': 'infer',
  'POST /v1/chat/completions': 'infer', 'POST /v1/completions': 'infer', 'POST /v1/messages': 'infer',
  'POST /v1/messages/count_tokens': 'infer', 'POST /v1/responses': 'infer', 'GET /v1/responses/:id': 'infer',
  'DELETE /v1/responses/:id': 'infer', 'POST /models/load': 'infer', 'POST /models/unload': 'infer', 'GET /props': 'infer',
  'POST /v1/systemone': 'infer', 'POST /v1/decisions': 'infer', 'POST /v1/audio/transcriptions': 'infer', 'POST /audio/transcriptions': 'infer', 'POST /tokenize': 'infer', 'POST /detokenize': 'infer',
  'POST /apply-template': 'infer', 'POST /infill': 'infer',
  'POST /v1/chat/completions/input_tokens': 'infer', 'POST /v1/responses/input_tokens': 'infer',
  'POST /v1/files': 'infer', 'GET /v1/files': 'infer', 'GET /v1/files/:id': 'infer', 'DELETE /v1/files/:id': 'infer',
  'GET /v1/files/:id/content': 'infer', 'POST /v1/batches': 'infer', 'GET /v1/batches': 'infer', 'GET /v1/batches/:id': 'infer',
  'POST /v1/batches/:id/cancel': 'infer', 'POST /v1/messages/batches': 'infer', 'GET /v1/messages/batches': 'infer',
  'GET /v1/messages/batches/:id': 'infer', 'POST /v1/messages/batches/:id/cancel': 'infer', 'GET /v1/messages/batches/:id/results': 'infer',
  'POST /api/pull': 'manage', 'POST /api/create': 'manage', 'DELETE /api/delete': 'manage', 'POST /api/copy': 'manage',
  'POST /api/import': 'manage', 'POST /api/stop': 'manage', 'HEAD /api/blobs/:digest': 'manage',
  'POST /api/blobs/:digest': 'manage', 'DELETE /api/blobs/:digest': 'manage', 'GET /api/convert/status': 'manage',
  'GET /metrics': 'admin', 'GET /api/runtimes': 'admin', 'GET /api/rpc-workers': 'admin', 'GET /v1/responses': 'admin',
  'GET /api/tags': 'any', 'GET /v1/models': 'any', 'GET /v1/models/*': 'any', 'POST /api/show': 'any', 'GET /api/ps': 'any',
  'GET /api/usage': 'any', 'GET /models': 'any',
}

const KEYS: Record<string, { secret: string, scopes: Scope[], models: string[] }> = {
  inferer: { secret: 'lg-test-inferer-0123456789', scopes: ['infer'], models: ['*'] },
  manager: { secret: 'lg-test-manager-0123456789', scopes: ['manage'], models: ['*'] },
  admin: { secret: 'lg-test-admin-000123456789', scopes: ['admin'], models: ['*'] },
  narrow: { secret: 'lg-test-narrow-00123456789', scopes: ['infer', 'manage'], models: ['acme/allowed-*', 'fast'] },
}

async function keysApp (t: Test) {
  const dir = await tempDir(t)
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: Object.entries(KEYS).map(([name, k]) => ({ name, hash: hashSecret(k.secret), scopes: k.scopes, models: k.models, limits: {}, created: new Date().toISOString() })),
  })
  const modelsDir = join(dir, 'models')
  const store = await openStore(modelsDir)
  for (const name of ['acme/allowed-one', 'acme/other']) {
    const gguf = join(dir, `${name.replace('/', '-')}.gguf`)
    await writeTinyGguf({ file: gguf, name })
    await store.import(name, gguf)
  }
  store.close()
  const app = await buildTestApp(await testConfig(t, {
    models_dir: modelsDir,
    auth: { keys_file: keysFile },
    // A pull a key may make hears "not found" at once instead of reaching out.
    hub: { endpoint: hub.url },
    models: { 'acme/other': { aliases: ['fast'] } },
  }))
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const call = async (key: keyof typeof KEYS, method: string, path: string, body?: unknown): Promise<{ status: number, body: string }> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${KEYS[key]!.secret}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, body: await res.text() }
  }
  return { app, call, keysFile }
}

// A body every route reads as naming one model (and nothing it would act on: the model does not exist).
const bodyFor = (model: string) => ({ model, name: model, messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', input: 'hi', query: 'hi', documents: ['a'], max_tokens: 1 })

t.test('every route: a key without its scope gets 403 saying which scope it lacks; a key with it gets past the check', async (t) => {
  const { app, call } = await keysApp(t)
  const routes = routesOf(app).filter((r) => r.method !== 'OPTIONS')
  // Fastify answers HEAD on each GET route by itself: the same route, the same scope.
  const needsOf = (r: { method: string, url: string }): RouteScope | undefined => SCOPES[`${r.method} ${r.url}`] ?? (r.method === 'HEAD' ? SCOPES[`GET ${r.url}`] : undefined)
  const names = routes.map((r) => `${r.method} ${r.url}`)
  t.same(routes.filter((r) => needsOf(r) === undefined).map((r) => `${r.method} ${r.url}`), [], 'every route of the app is in the table (a new route: decide its scope here)')
  t.same(Object.keys(SCOPES).filter((n) => !names.includes(n)), [], 'every route of the table is in the app')

  const problems: string[] = []
  let checked = 0
  for (const route of routes) {
    const needs = needsOf(route)!
    if (needs === 'public') continue
    for (const [key, { scopes }] of Object.entries(KEYS)) {
      if (key === 'narrow') continue
      const hasBody = !['GET', 'HEAD'].includes(route.method)
      const res = await call(key, route.method, sampleUrl(route.url, 'acme/nothere'), hasBody ? bodyFor('acme/nothere') : undefined)
      const allowed = needs === 'any' || scopes.includes(needs)
      checked++
      const label = `${route.method} ${route.url} with the ${scopes.join('+')} key`
      if (allowed && (res.status === 401 || res.status === 403)) problems.push(`${label}: ${res.status} ${res.body.slice(0, 200)}`)
      if (!allowed) {
        if (res.status !== 403) problems.push(`${label}: ${res.status}, not 403`)
        else if (route.method !== 'HEAD' && !res.body.includes(`lacks the \\"${needs}\\" scope`) && !res.body.includes(`lacks the "${needs}" scope`)) problems.push(`${label}: 403 without naming the scope: ${res.body}`)
      }
    }
  }
  t.ok(checked > 100, `${checked} route and key pairs`)
  t.same(problems, [], 'each scope enforced on every route, and only there')
})

t.test('models: a key uses only its own, a refusal is the same whether the model exists or not, and lists show only its own', async (t) => {
  const { call } = await keysApp(t)
  const existing = await call('narrow', 'POST', '/api/chat', bodyFor('acme/other'))
  const absent = await call('narrow', 'POST', '/api/chat', bodyFor('acme/nothere'))
  t.equal(existing.status, 403)
  t.same(JSON.parse(existing.body), { error: 'the API key "narrow" may not use model "acme/other"' }, 'it says which model, not whether it exists')
  t.equal(absent.body.replace('acme/nothere', 'acme/other'), existing.body, 'a model that does not exist: the same answer')
  const openai = await call('narrow', 'POST', '/v1/chat/completions', bodyFor('acme/other'))
  t.equal(openai.status, 403)
  t.match(JSON.parse(openai.body), { error: { message: /may not use model "acme\/other"/, code: 'permission_denied' } }, 'in OpenAI\'s shape')
  const anthropic = await call('narrow', 'POST', '/v1/messages', bodyFor('acme/other'))
  t.match(JSON.parse(anthropic.body), { type: 'error', error: { type: 'permission_error', message: /may not use model/ } }, 'in Anthropic\'s shape')
  t.equal((await call('narrow', 'POST', '/api/copy', { source: 'acme/allowed-one', destination: 'acme/other-copy' })).status, 403, 'a copy to a name outside its models')
  t.equal((await call('narrow', 'POST', '/api/show', { model: 'acme/other' })).status, 403, '/api/show of another model')
  t.equal((await call('narrow', 'GET', '/v1/models/acme/other')).status, 403, '/v1/models/<another model>')
  t.equal((await call('narrow', 'POST', '/api/show', { model: 'acme/allowed-one' })).status, 200, '/api/show of its own model')
  t.equal((await call('narrow', 'POST', '/api/show', { model: 'fast' })).status, 200, 'an alias it was given (fast reaches acme/other)')

  const tags = JSON.parse((await call('narrow', 'GET', '/api/tags')).body) as { models: Array<{ name: string }> }
  t.same(tags.models.map((m) => m.name), ['acme/allowed-one'], '/api/tags: its model only')
  const openaiList = JSON.parse((await call('narrow', 'GET', '/v1/models')).body) as { data: Array<{ id: string }> }
  t.notOk(openaiList.data.some((m) => m.id.startsWith('acme/other')), `/v1/models: not the others (${openaiList.data.map((m) => m.id).join(', ')})`)
  t.ok(openaiList.data.some((m) => m.id === 'acme/allowed-one'), '/v1/models: its own')
  const full = JSON.parse((await call('inferer', 'GET', '/api/tags')).body) as { models: Array<{ name: string }> }
  t.same(full.models.map((m) => m.name).sort(), ['acme/allowed-one', 'acme/other'], 'a key with every model sees them all')
})

t.test('a plugin\'s route that declares no scope needs the admin scope', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'hello.mjs'), 'export default async function (app) { app.get("/api/greeting", async () => ({ hello: "there" })) }\n')
  await writeKeysFile(join(dir, 'keys.yaml'), { keys: ['inferer', 'admin'].map((name) => ({ name, hash: hashSecret(KEYS[name]!.secret), scopes: KEYS[name]!.scopes, models: ['*'], limits: {}, created: '' })) })
  await writeFile(join(dir, 'config.yaml'), `data_dir: ${dir}\nlog_level: silent\nbuild_gpu_runtime: false\nplugins:\n  - path: ./hello.mjs\n`)
  const app = await buildTestApp(loadConfig({ config: join(dir, 'config.yaml') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
  t.teardown(() => app.close())
  const as = (key: string) => app.inject({ method: 'GET', url: '/api/greeting', headers: { authorization: `Bearer ${KEYS[key]!.secret}` } })
  const refused = await as('inferer')
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { error: /lacks the "admin" scope/ })
  t.same((await as('admin')).json(), { hello: 'there' })
})

t.test('keys off: no scope applies', async (t) => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'GET', url: '/api/runtimes' })).statusCode, 200, 'an admin route answers without a key')
  t.equal((await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/nothere' } })).statusCode, 404, 'a model route is not refused, only not found')
})
