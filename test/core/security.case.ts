import t from 'tap'
import { build } from '../helpers/app.js'

t.test('API keys: required when set, refused when wrong, health stays public', async (t) => {
  const app = await build(t, { auth: { api_keys: ['k-one', 'k-two'] } })
  const none = await app.inject({ method: 'GET', url: '/api/nothing' })
  t.equal(none.statusCode, 401)
  t.match(none.json().error, /missing API key/)
  t.equal(none.headers['www-authenticate'], 'Bearer')
  const wrong = await app.inject({ method: 'GET', url: '/api/nothing', headers: { authorization: 'Bearer k-three' } })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.json().error, /invalid API key/)
  const prefixOnly = await app.inject({ method: 'GET', url: '/api/nothing', headers: { authorization: 'Bearer k-on' } })
  t.equal(prefixOnly.statusCode, 401, 'a prefix of a key is not the key')
  const notBearer = await app.inject({ method: 'GET', url: '/api/nothing', headers: { authorization: 'Basic k-one' } })
  t.equal(notBearer.statusCode, 401)
  const wrongV1 = await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer nope' } })
  t.equal(wrongV1.statusCode, 401)
  t.equal(wrongV1.json().error.code, 'invalid_api_key', 'OpenAI shape on /v1')
  for (const key of ['k-one', 'k-two']) {
    const ok = await app.inject({ method: 'GET', url: '/api/nothing', headers: { authorization: `Bearer ${key}` } })
    t.equal(ok.statusCode, 404, `${key} gets past auth (to the 404 of the unknown route)`)
  }
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 200, '/api/health needs no key')
})

t.test('without API keys any key or none is accepted', async (t) => {
  const app = await build(t)
  for (const headers of [{}, { authorization: 'Bearer sk-anything' }]) {
    const res = await app.inject({ method: 'GET', url: '/api/health', headers })
    t.equal(res.statusCode, 200)
  }
})

t.test('a foreign Host header is refused on a loopback bind', async (t) => {
  const app = await build(t, { host: '127.0.0.1', allowed_hosts: ['*.example.internal'] })
  const evil = await app.inject({ method: 'GET', url: '/api/health', headers: { host: 'evil.example.com:11435' } })
  t.equal(evil.statusCode, 403)
  t.match(evil.json().error, /host "evil\.example\.com" is not allowed/)
  for (const host of ['localhost:11435', '127.0.0.1:11435', '[::1]:11435', 'app.localhost', 'box.example.internal']) {
    const res = await app.inject({ method: 'GET', url: '/api/health', headers: { host } })
    t.equal(res.statusCode, 200, `${host} is allowed`)
  }
})

t.test('any Host is accepted when bound to all interfaces', async (t) => {
  const app = await build(t, { host: '0.0.0.0' })
  const res = await app.inject({ method: 'GET', url: '/api/health', headers: { host: 'server.lan:11435' } })
  t.equal(res.statusCode, 200)
})

t.test('CORS: an allowed origin gets CORS headers, a refused one gets 403', async (t) => {
  const app = await build(t, { cors: { origins: ['http://localhost:*', 'https://chat.example'] } })
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/api/health',
    headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'http://localhost:3000')
  t.match(String(preflight.headers['access-control-allow-methods']), /POST/)
  const simple = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://chat.example' } })
  t.equal(simple.statusCode, 200)
  t.equal(simple.headers['access-control-allow-origin'], 'https://chat.example')

  const refused = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://evil.example' } })
  t.equal(refused.statusCode, 403)
  t.notOk(refused.headers['access-control-allow-origin'])
  t.match(refused.json().error, /origin "https:\/\/evil\.example" is not allowed/)
  const refusedPreflight = await app.inject({
    method: 'OPTIONS', url: '/api/chat', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
  })
  t.equal(refusedPreflight.statusCode, 403)
  const noOrigin = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(noOrigin.statusCode, 200, 'non-browser clients send no Origin')
})
