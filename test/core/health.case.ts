import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { OLLAMA_API_VERSION } from '../../core/base/version.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../helpers/app.js'

const ownVersion = (): string => (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version

/** Whether semver `a` >= `b` (release versions: major.minor.patch). */
function atLeast (a: string, b: string): boolean {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return x![i]! > y![i]!
  return true
}

t.test('GET /api/health answers ok', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})

t.test('Ollama\'s probes: GET and HEAD / answer "llamagate is running", /api/version the Ollama API level and ours', async (t) => {
  const app = await build(t)
  const root = await app.inject({ method: 'GET', url: '/' })
  t.equal(root.statusCode, 200)
  t.match(root.headers['content-type'], /^text\/plain/)
  t.equal(root.body, 'llamagate is running')
  const head = await app.inject({ method: 'HEAD', url: '/' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  const version = await app.inject({ method: 'GET', url: '/api/version' })
  t.equal(version.statusCode, 200)
  t.same(version.json(), { version: OLLAMA_API_VERSION, llamagate_version: ownVersion() }, 'Ollama\'s field, and ours beside it')
  t.ok(atLeast(version.json().version, '0.13.4'), 'at least what Codex --oss requires')
  t.equal((await app.inject({ method: 'HEAD', url: '/api/version' })).statusCode, 200)
})

t.test('Claude Code\'s preflight: HEAD /api/hello answers 200 with no body, GET the health reply', async (t) => {
  const app = await build(t)
  const head = await app.inject({ method: 'HEAD', url: '/api/hello' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  const get = await app.inject({ method: 'GET', url: '/api/hello' })
  t.same(get.json(), { status: 'ok' })
})

t.test('the probes need no API key; everything else still does', async (t) => {
  const app = await build(t, { auth: { api_keys: ['sekret'] } })
  for (const url of ['/', '/api/version', '/api/health', '/api/hello']) t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, `${url} without a key`)
  t.equal((await app.inject({ method: 'HEAD', url: '/api/hello' })).statusCode, 200, 'HEAD /api/hello (Claude Code\'s) without a key')
  t.equal((await app.inject({ method: 'GET', url: '/api/tags' })).statusCode, 401, '/api/tags without a key')
  t.equal((await app.inject({ method: 'GET', url: '/api/tags', headers: { 'x-api-key': 'sekret' } })).statusCode, 200, 'x-api-key is a key too')
  t.equal((await app.inject({ method: 'GET', url: '/api/tags', headers: { 'x-api-key': 'nope' } })).statusCode, 401)
})

t.test('the official ollama client\'s version() reads it', async (t) => {
  const app = await build(t)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const client = new Ollama({ host: url })
  t.same(await client.version(), { version: OLLAMA_API_VERSION, llamagate_version: ownVersion() })
})

t.test('Codex --oss\'s probes, replayed on the Ollama address: /v1/models, /api/version >= 0.13.4, /api/tags by name', async (t) => {
  // codex-rs/ollama: a base URL ending in /v1 is probed with GET /v1/models, the version gates the Responses API
  // ("Ollama 0.1.0 is too old. Codex requires Ollama 0.13.4 or newer"), and the model is looked for by `name`
  // in /api/tags before Codex would pull it. reqwest sends `Accept: */*`.
  const app = await build(t, { ollama_listen: '127.0.0.1:0' })
  const file = join(await tempDir(t), 'tiny.gguf')
  await writeTinyGguf({ file, name: 'acme/tiny' })
  await app.store.import('acme/tiny', file)
  await app.listen({ host: '127.0.0.1', port: 0 })
  // Codex's base URL is `${root}/v1`; it asks the root for the native routes.
  const root = app.ollamaListener!.url
  const get = (url: string): Promise<Response> => fetch(url, { headers: { accept: '*/*' } })

  const models = await get(`${root}/v1/models`)
  t.equal(models.status, 200, 'the probe succeeds')
  t.ok(((await models.json()) as { data: Array<{ id: string }> }).data.some((m) => m.id === 'acme/tiny'))
  const { version } = await (await get(`${root}/api/version`)).json() as { version: string }
  t.ok(atLeast(version, '0.13.4'), `${version} >= 0.13.4: Codex goes on`)
  const tags = await (await get(`${root}/api/tags`)).json() as { models: Array<{ name: string }> }
  t.ok(tags.models.some((m) => m.name === 'acme/tiny'), 'the model is found by name: no pull')
})
