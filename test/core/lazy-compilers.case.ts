import t from 'tap'
import Fastify from 'fastify'
import { lazyCompilers, lazyValidators, warmValidators } from '../../core/server/lazy-compilers.js'
import { ajvCompiler } from '../../core/base/lazy-require.js'

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

t.test('warmValidators prepares what every first validation shares, and leaves each route its own compile', async (t) => {
  const made: Array<{ options: unknown }> = []
  const compiled: string[] = []
  // Fastify's own Ajv compiler, counted: each instance it makes and each schema given to one.
  const load = (): ReturnType<typeof lazyValidators> => {
    const real = ajvCompiler().AjvCompiler()
    return ((externalSchemas: unknown, options: unknown) => {
      made.push({ options })
      const compile = (real as (e: unknown, o: unknown) => (route: { url: string }) => unknown)(externalSchemas, options)
      return (route: { url: string }) => { compiled.push(route.url); return compile(route) }
    }) as unknown as ReturnType<typeof lazyValidators>
  }
  const factory = lazyValidators(load)
  const app = Fastify({ schemaController: { compilersFactory: { buildValidator: factory } }, ajv: { customOptions: { useDefaults: true } } })
  t.teardown(() => app.close())
  app.post('/echo', { schema: { body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' }, d: { type: 'string', default: 'filled' } } } } }, async (request) => request.body)
  await app.ready()
  t.equal(made.length, 0, 'nothing prepared at the start')

  warmValidators(factory)
  t.equal(made.length, 1, 'one Ajv instance, made by the warm-up')
  t.match(made[0]!.options, { customOptions: { useDefaults: true } }, 'with the app\'s Ajv options')
  t.same(compiled, ['/'], 'its meta-schema compiled by way of an empty schema; no route\'s own yet')
  warmValidators(factory)
  t.equal(made.length, 1, 'warmed twice: prepared once')

  t.same((await app.inject({ method: 'POST', url: '/echo', payload: { n: 1 } })).json(), { n: 1, d: 'filled' }, 'validates with the options it was made with')
  t.equal(made.length, 1, 'the first request used the warmed instance')
  t.same(compiled, ['/', '/echo'], 'and compiled its own route only')
  t.equal((await app.inject({ method: 'POST', url: '/echo', payload: { n: 'one' } })).statusCode, 400)

  t.doesNotThrow(() => warmValidators(undefined), 'no factory: nothing to do')
  const other = (): never => { throw new Error('called') }
  t.doesNotThrow(() => warmValidators(other), 'a factory that is not lazyValidators\' is left alone, not called')
  t.equal(made.length, 1, 'and the warmed one is not made again')
})

t.test('a warm-up whose Ajv preparation fails leaves the failure to the route\'s first request', async (t) => {
  const factory = lazyValidators(() => { throw new Error('no Ajv here') })
  const app = Fastify({ schemaController: { compilersFactory: { buildValidator: factory } } })
  t.teardown(() => app.close())
  app.post('/echo', { schema: { body: { type: 'object' } } }, async (request) => request.body)
  await app.ready()
  t.doesNotThrow(() => warmValidators(factory), 'the warm-up throws nothing (a server calls it on its own tick)')
  t.equal((await app.inject({ method: 'POST', url: '/echo', payload: {} })).statusCode, 500, 'the route\'s first request fails as it would have')
})
