// The authenticate hook, through the signed-token example (docs/examples/signed-token-plugin.ts) as a third party
// installs it: a token accepted and scoped as a key on every inference surface, a bad one refused in each surface's
// shape, and an authenticator that throws, rejects or hangs failing only its own request.
import { createHmac } from 'node:crypto'
import { Writable } from 'node:stream'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { post, serveTinyModels, sharedServer } from '../helpers/inference.js'
import { exampleSource, installPlugin, projectDir } from '../helpers/example-plugin.js'

const KEY = 'lg-test-key-0123456789abcdef'
const SECRET = 'a-secret-of-the-key-set-0123456789abcdef'

/** A JWT signed HS256 with `secret` under key id `kid`. */
function token (claims: Record<string, unknown>, { kid = 'team-2026', secret = SECRET } = {}): string {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url')
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT', kid })}.${part(claims)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}

const inAnHour = (): number => Math.floor(Date.now() / 1000) + 3600
const GOOD = token({ sub: 'team-a', scopes: ['infer'], models: ['acme/tiny'], exp: inAnHour(), limits: { requests_per_minute: 1000 } })

// An authenticator of another plugin, asked first, that misbehaves as its request's x-flaky header says.
const FLAKY = `import { definePlugin, ForbiddenError } from 'llamagate/plugin'
export default definePlugin({ name: 'flaky-sso', register (app) {
  app.authenticators.add({ name: 'flaky-sso', order: -1, authenticate (request, signal) {
    const mode = request.headers['x-flaky']
    if (mode === 'throw') throw new Error('sso answered 500 for s3cr3t-client')
    if (mode === 'reject') return Promise.reject(new TypeError('cannot read s3cr3t of undefined'))
    if (mode === 'hang') return new Promise((resolve) => signal.addEventListener('abort', () => { request.log.warn('flaky-sso gave up'); resolve(undefined) }))
    if (mode === 'garbage') return { name: 'x', scopes: 'all', models: [] }
    if (mode === 'forbid') throw new ForbiddenError('your SSO group may not use this gateway', 'sso_group')
    return undefined
  } })
} })
`

let log = ''
const tiny = sharedServer(async () => {
  const dir = await projectDir(t)
  await installPlugin(dir, 'llamagate-plugin-signed-token', await exampleSource('signed-token-plugin.ts'))
  await installPlugin(dir, 'llamagate-plugin-flaky-sso', FLAKY)
  const stream = new Writable({ write (chunk, _encoding, done) { log += String(chunk); done() } })
  return serveTinyModels(t, ['acme/tiny', 'acme/other'], {
    auth: { api_keys: [KEY] },
    limits: { hook_timeout: '300ms' },
    plugins: [{ path: 'llamagate-plugin-flaky-sso' }, { path: 'llamagate-plugin-signed-token', options: { keys: { 'team-2026': SECRET } } }],
  }, { configFile: join(dir, 'config.yaml'), build: { logger: { level: 'warn', stream } } })
})

type Shape = 'native' | 'openai' | 'anthropic'
// `done`: the answer's end, whole or streamed (its finish or stop reason: what a random-weights model says is not asked).
interface Surface { path: string, shape: Shape, body: (model: string, stream: boolean) => object, done: (text: string) => boolean }
const chat = [{ role: 'user', content: 'hi' }]
const SURFACES: Surface[] = [
  { path: '/api/chat', shape: 'native', body: (model, stream) => ({ model, messages: chat, stream, options: { num_predict: 3 } }), done: (text) => /"done":true/.test(text) },
  { path: '/api/generate', shape: 'native', body: (model, stream) => ({ model, prompt: 'hi', stream, options: { num_predict: 3 } }), done: (text) => /"done":true/.test(text) },
  { path: '/v1/chat/completions', shape: 'openai', body: (model, stream) => ({ model, messages: chat, stream, max_tokens: 3 }), done: (text) => /"finish_reason":"\w+"/.test(text) },
  { path: '/v1/completions', shape: 'openai', body: (model, stream) => ({ model, prompt: 'hi', stream, max_tokens: 3 }), done: (text) => /"finish_reason":"\w+"/.test(text) },
  { path: '/v1/responses', shape: 'openai', body: (model, stream) => ({ model, input: 'hi', stream, max_output_tokens: 3 }), done: (text) => /"status":"(completed|incomplete)"/.test(text) },
  { path: '/v1/messages', shape: 'anthropic', body: (model, stream) => ({ model, messages: chat, stream, max_tokens: 3 }), done: (text) => /"stop_reason":"\w+"/.test(text) },
]

/** The error's message, read as the surface's clients read it; fails the test on any other shape. */
function messageOf (t: Test, shape: Shape, body: any, type: string): string {
  if (shape === 'native') {
    t.same(Object.keys(body), ['error'], 'native shape')
    return body.error
  }
  if (shape === 'openai') {
    t.match(body, { error: { message: String, type: type === 'server' ? 'server_error' : 'invalid_request_error' } }, 'OpenAI shape')
    return body.error.message
  }
  t.match(body, { type: 'error', error: { type, message: String } }, 'Anthropic shape')
  return body.error.message
}

const bearer = (credential: string): Record<string, string> => ({ authorization: `Bearer ${credential}` })

t.test('a signed token is accepted and scoped as a key on every inference surface, streamed and whole', async (t) => {
  const { url } = await tiny()
  for (const surface of SURFACES) {
    for (const stream of [false, true]) {
      const res = await post(url + surface.path, surface.body('acme/tiny', stream), bearer(GOOD))
      const text = await res.text()
      t.equal(res.status, 200, `${surface.path} stream=${stream}: ${text.slice(0, 200)}`)
      t.ok(surface.done(text), `${surface.path} stream=${stream}: answered whole`, { answer: text.slice(-400) })
    }
    // A model the token does not name: 403, as a key's, whether it exists or not.
    const other = await post(url + surface.path, surface.body('acme/other', true), { 'x-api-key': GOOD })
    t.equal(other.status, 403, `${surface.path}: another model refused`)
    t.match(messageOf(t, surface.shape, await other.json(), 'permission_error'), /"team-a" may not use model "acme\/other"/)
  }
  // Lists show only its models, a route out of its scopes is refused, its usage is counted under its name.
  const models = await (await fetch(`${url}/v1/models`, { headers: bearer(GOOD) })).json() as { data: Array<{ id: string }> }
  t.same(models.data.map((m) => m.id), ['acme/tiny'])
  t.equal((await fetch(`${url}/api/runtimes`, { headers: bearer(GOOD) })).status, 403, 'no admin scope')
  const usage = await (await fetch(`${url}/api/usage`, { headers: bearer(GOOD) })).json() as { keys: Array<{ key: string, limits: object, models: Array<{ model: string, requests: number }> }> }
  t.match(usage.keys, [{ key: 'team-a', limits: { requests_per_minute: 1000 }, models: [{ model: 'acme/tiny' }] }])
  // The last answer's booking may come a moment after its client read it whole.
  t.ok(usage.keys[0]!.models[0]!.requests >= 11, 'its answers are counted under its name')
  // The API key check still follows the authenticators: a key is a key.
  const tags = await (await fetch(`${url}/api/tags`, { headers: bearer(KEY) })).json() as { models: unknown[] }
  t.equal(tags.models.length, 2)
})

t.test('a wrong, expired or unknown-key token is refused 401 in each surface\'s shape; an authenticator\'s 403 too', async (t) => {
  const { url } = await tiny()
  const now = Math.floor(Date.now() / 1000)
  const claims = { sub: 'team-a', scopes: ['infer'], models: ['*'], exp: inAnHour() }
  const bad: Array<[string, string, RegExp]> = [
    ['wrong signature', token(claims, { secret: 'another-secret-of-32-characters-or-more' }), /bad signature/],
    ['unknown key id', token(claims, { kid: 'team-1999' }), /not signed \(HS256\) by a known key id/],
    ['expired', token({ ...claims, exp: now - 3600 }), /expired/],
    ['not a token, not a key', 'lg-no-such-key', /invalid API key/],
  ]
  for (const [what, credential, message] of bad) {
    for (const surface of SURFACES) {
      const res = await post(url + surface.path, surface.body('acme/tiny', true), bearer(credential))
      t.equal(res.status, 401, `${what} on ${surface.path}`)
      t.equal(res.headers.get('www-authenticate'), 'Bearer')
      t.match(messageOf(t, surface.shape, await res.json(), 'authentication_error'), message, `${what} on ${surface.path}`)
    }
  }
  for (const surface of SURFACES) {
    const res = await post(url + surface.path, surface.body('acme/tiny', true), { ...bearer(GOOD), 'x-flaky': 'forbid' })
    t.equal(res.status, 403, `forbidden on ${surface.path}`)
    t.equal(messageOf(t, surface.shape, await res.json(), 'permission_error'), 'your SSO group may not use this gateway')
  }
})

t.test('an authenticator that throws, rejects, hangs or grants nonsense fails only its request', async (t) => {
  const { url } = await tiny()
  const cases: Array<[string, Surface, number, RegExp]> = [
    ['throw', SURFACES[0]!, 500, /authenticator "flaky-sso" failed: sso answered 500/],
    ['reject', SURFACES[2]!, 500, /authenticator "flaky-sso" failed: cannot read/],
    ['garbage', SURFACES[4]!, 500, /authenticator "flaky-sso" returned a grant that is not one: scopes/],
    ['hang', SURFACES[5]!, 504, /flaky-sso gave up[^]*authenticator "flaky-sso" did not answer within limits\.hook_timeout \(300 ms\)/],
  ]
  for (const [mode, surface, status, logged] of cases) {
    log = ''
    const res = await post(url + surface.path, surface.body('acme/tiny', true), { ...bearer(GOOD), 'x-flaky': mode })
    const text = await res.text()
    t.equal(res.status, status, `${mode} on ${surface.path}`)
    const message = messageOf(t, surface.shape, JSON.parse(text), status === 504 ? 'timeout_error' : surface.shape === 'openai' ? 'server' : 'api_error')
    t.match(message, status === 504 ? /did not finish in time \(limits\.hook_timeout\)/ : /^authentication failed inside the server: see the server log/)
    t.notMatch(text, /s3cr3t|flaky|team-a/, 'the answer names nothing of the plugin nor the credential')
    // Logged before the answer was sent: the line is there once the answer is.
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as { msg: string, plugin?: string })
    t.match(lines.map((line) => line.msg).join('\n'), logged, 'the log names the plugin')
    t.ok(lines.some((line) => line.plugin === 'flaky-sso'), 'by a field of its own too')
    // The next request, the same credential without the fault, is served.
    const next = await post(url + surface.path, surface.body('acme/tiny', false), bearer(GOOD))
    t.equal(next.status, 200, `after ${mode}: the next request is served`)
    await next.text()
  }
  // A public route (a probe) is answered whatever an authenticator does: its failure counts as no credential there.
  t.equal((await fetch(`${url}/livez`, { headers: { 'x-flaky': 'throw' } })).status, 200)
})


t.test('a grant under an API key\'s name is refused: it would share that key\'s usage, limits and cached prompts', async (t) => {
  const { url } = await tiny()
  log = ''
  const impostor = token({ sub: 'config-1', scopes: ['infer'], models: ['acme/tiny'], exp: inAnHour() })
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 1 } }, bearer(impostor))
  t.equal(res.status, 500)
  t.match((await res.json() as { error: string }).error, /^authentication failed inside the server/)
  t.match(log, /authenticator \\"signed-token\\" granted the name \\"config-1\\", which an API key has: refused/)
  const own = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 1 } }, bearer(KEY))
  t.equal(own.status, 200, 'the API key itself is served')
  await own.text()
})
