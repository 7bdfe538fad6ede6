import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { build } from '../helpers/app.js'

const ECHO_PLUGIN = fileURLToPath(new URL('../fixtures/plugins/echo-plugin.js', import.meta.url))

async function app (t: Test) {
  return build(t, { plugins: [{ path: ECHO_PLUGIN, options: { tag: 'x' } }], limits: { body_size: 1024 } })
}

const isNative = (t: Test, body: any, pattern: RegExp) => {
  t.same(Object.keys(body), ['error'], 'native shape has only "error"')
  t.type(body.error, 'string')
  t.match(body.error, pattern)
}
const isOpenAi = (t: Test, body: any, type: string, pattern: RegExp) => {
  t.same(Object.keys(body), ['error'])
  t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type'])
  t.equal(body.error.type, type)
  t.match(body.error.message, pattern)
}

t.test('a valid request passes through both surfaces', async (t) => {
  const server = await app(t)
  for (const url of ['/api/echo', '/v1/echo']) {
    const res = await server.inject({ method: 'POST', url, payload: { model: 'a/b', n: 2 } })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { echo: { model: 'a/b', n: 2 }, tag: 'x' })
  }
})

t.test('a body without a JSON content type is still read as JSON (curl -d, Ollama clients)', async (t) => {
  const server = await app(t)
  for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
    const res = await server.inject({ method: 'POST', url: '/api/echo', headers: { 'content-type': type }, payload: '{"model":"a/b"}' })
    t.equal(res.statusCode, 200, type)
  }
})

t.test('malformed JSON is 400 in the shape of the surface', async (t) => {
  const server = await app(t)
  const native = await server.inject({ method: 'POST', url: '/api/echo', headers: { 'content-type': 'application/json' }, payload: '{"model": ' })
  t.equal(native.statusCode, 400)
  isNative(t, native.json(), /not valid JSON/)
  const openai = await server.inject({ method: 'POST', url: '/v1/echo', headers: { 'content-type': 'application/json' }, payload: '{oops}' })
  t.equal(openai.statusCode, 400)
  isOpenAi(t, openai.json(), 'invalid_request_error', /not valid JSON/)
})

t.test('an empty body is 400', async (t) => {
  const server = await app(t)
  const res = await server.inject({ method: 'POST', url: '/api/echo', headers: { 'content-type': 'application/json' } })
  t.equal(res.statusCode, 400)
  isNative(t, res.json(), /missing request body/)
})

t.test('schema violations are 400 with the field named', async (t) => {
  const server = await app(t)
  const wrongType = await server.inject({ method: 'POST', url: '/api/echo', payload: { model: 5 } })
  t.equal(wrongType.statusCode, 400)
  isNative(t, wrongType.json(), /body\/model must be string/)
  const missing = await server.inject({ method: 'POST', url: '/v1/echo', payload: { n: 1 } })
  t.equal(missing.statusCode, 400)
  isOpenAi(t, missing.json(), 'invalid_request_error', /must have required property 'model'/)
  const outOfRange = await server.inject({ method: 'POST', url: '/api/echo', payload: { model: 'a/b', n: 0 } })
  t.equal(outOfRange.statusCode, 400)
  isNative(t, outOfRange.json(), /body\/n must be >= 1/)
  const stringNumber = await server.inject({ method: 'POST', url: '/api/echo', payload: { model: 'a/b', n: '3' } })
  t.equal(stringNumber.statusCode, 400, 'types are not coerced')
})

t.test('a body over the limit is 413', async (t) => {
  const server = await app(t)
  const payload = JSON.stringify({ model: 'a/b', pad: 'x'.repeat(2000) })
  const native = await server.inject({ method: 'POST', url: '/api/echo', headers: { 'content-type': 'application/json' }, payload })
  t.equal(native.statusCode, 413)
  isNative(t, native.json(), /larger than the configured limit/)
  const openai = await server.inject({ method: 'POST', url: '/v1/echo', headers: { 'content-type': 'application/json' }, payload })
  t.equal(openai.statusCode, 413)
  isOpenAi(t, openai.json(), 'invalid_request_error', /larger than the configured limit/)
})

t.test('unknown routes are JSON 404s, wrong methods 405 with Allow', async (t) => {
  const server = await app(t)
  const unknown = await server.inject({ method: 'GET', url: '/api/nothing-here' })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.headers['content-type'], /application\/json/)
  isNative(t, unknown.json(), /no such endpoint: GET \/api\/nothing-here/)
  const unknownV1 = await server.inject({ method: 'POST', url: '/v1/nothing' })
  t.equal(unknownV1.statusCode, 404)
  isOpenAi(t, unknownV1.json(), 'invalid_request_error', /no such endpoint/)
  const wrongMethod = await server.inject({ method: 'DELETE', url: '/api/health' })
  t.equal(wrongMethod.statusCode, 405)
  t.equal(wrongMethod.headers.allow, 'GET, HEAD')
  isNative(t, wrongMethod.json(), /method DELETE is not allowed on \/api\/health/)
  const wrongMethodV1 = await server.inject({ method: 'GET', url: '/v1/echo' })
  t.equal(wrongMethodV1.statusCode, 405)
  isOpenAi(t, wrongMethodV1.json(), 'invalid_request_error', /use POST/)
})

t.test('gateway errors keep their status; bugs are 500 without details', async (t) => {
  const server = await app(t)
  const missing = await server.inject({ method: 'POST', url: '/api/missing', payload: {} })
  t.equal(missing.statusCode, 404)
  isNative(t, missing.json(), /model "acme\/none" not found, pull it first/)
  const missingV1 = await server.inject({ method: 'POST', url: '/v1/missing', payload: {} })
  t.equal(missingV1.statusCode, 404)
  isOpenAi(t, missingV1.json(), 'invalid_request_error', /not found/)
  t.equal(missingV1.json().error.code, 'model_not_found')
  const crash = await server.inject({ method: 'POST', url: '/api/crash', payload: {} })
  t.equal(crash.statusCode, 500)
  isNative(t, crash.json(), /internal server error/)
  t.notMatch(crash.body, /secret internal detail/)
  const crashV1 = await server.inject({ method: 'POST', url: '/v1/crash', payload: {} })
  t.equal(crashV1.statusCode, 500)
  isOpenAi(t, crashV1.json(), 'server_error', /internal server error/)
})
