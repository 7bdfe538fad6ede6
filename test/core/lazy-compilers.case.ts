import t from 'tap'
import Fastify from 'fastify'
import { lazyCompilers, lazyValidators } from '../../core/lazy-compilers.js'

t.test('a route\'s validator is compiled on its first request, and validates as Ajv does', async (t) => {
  const app = Fastify({ schemaController: { compilersFactory: { buildValidator: lazyValidators() } } })
  t.teardown(() => app.close())
  // A schema Ajv refuses: eager compilation would fail the start; this one fails only the route's first request.
  app.post('/broken', { schema: { body: { type: 'object', properties: { a: { type: 'nope' } } } } }, async () => 'never')
  app.post('/echo', { schema: { body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' }, d: { type: 'string', default: 'filled' } } } } }, async (request) => request.body)
  await t.resolves(async () => { await app.ready() }, 'a schema Ajv cannot compile does not stop the start')

  const good = await app.inject({ method: 'POST', url: '/echo', payload: { n: 1 } })
  t.same(good.json(), { n: 1, d: 'filled' }, 'valid, with the schema\'s default filled in')
  const bad = await app.inject({ method: 'POST', url: '/echo', payload: { n: 'one' } })
  t.equal(bad.statusCode, 400)
  t.match(bad.json().message, /body\/n must be integer/, 'Ajv\'s own words, from the failed validation')
  const again = await app.inject({ method: 'POST', url: '/echo', payload: { n: 2 } })
  t.same(again.json(), { n: 2, d: 'filled' }, 'the errors of the last failure do not stay')
  t.equal((await app.inject({ method: 'POST', url: '/broken', payload: {} })).statusCode, 500, 'the broken schema fails its own route')
})

t.test('a response\'s serializer is compiled on its first use, and serializes as fast-json-stringify does', async (t) => {
  const app = Fastify({ schemaController: { compilersFactory: lazyCompilers() } })
  t.teardown(() => app.close())
  // A response schema fast-json-stringify refuses: eager compilation would fail the start.
  app.get('/broken', { schema: { response: { 200: { type: 'object', properties: { a: { $ref: '#/nowhere' } } } } } }, async () => ({ a: 1 }))
  app.get('/shaped', { schema: { response: { 200: { type: 'object', properties: { n: { type: 'integer' }, s: { type: 'string' } } } } } }, async () => ({ n: 2, s: 'x', extra: 'dropped' }))
  await t.resolves(async () => { await app.ready() }, 'a schema the serializer cannot compile does not stop the start')

  for (let i = 0; i < 2; i++) {
    const shaped = await app.inject({ method: 'GET', url: '/shaped' })
    t.equal(shaped.body, '{"n":2,"s":"x"}', `answer ${i + 1}: shaped by the schema, unknown keys left out`)
  }
  t.equal((await app.inject({ method: 'GET', url: '/broken' })).statusCode, 500, 'the broken schema fails its own route')
})
