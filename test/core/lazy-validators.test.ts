import t from 'tap'
import Fastify from 'fastify'
import { lazyValidators } from '../../core/lazy-validators.js'

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
