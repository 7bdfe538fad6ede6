import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/paths.js'
import { build } from '../helpers/app.js'

t.test('GET /api/health answers ok', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})

t.test('Ollama\'s probes: GET and HEAD / answer "llamagate is running", /api/version the version', async (t) => {
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
  t.same(version.json(), { version: JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')).version })
  t.equal((await app.inject({ method: 'HEAD', url: '/api/version' })).statusCode, 200)
})

t.test('the probes need no API key; everything else still does', async (t) => {
  const app = await build(t, { auth: { api_keys: ['sekret'] } })
  for (const url of ['/', '/api/version', '/api/health']) t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, `${url} without a key`)
  t.equal((await app.inject({ method: 'GET', url: '/api/tags' })).statusCode, 401, '/api/tags without a key')
  t.equal((await app.inject({ method: 'GET', url: '/api/tags', headers: { 'x-api-key': 'sekret' } })).statusCode, 200, 'x-api-key is a key too')
  t.equal((await app.inject({ method: 'GET', url: '/api/tags', headers: { 'x-api-key': 'nope' } })).statusCode, 401)
})

t.test('the official ollama client\'s version() reads it', async (t) => {
  const app = await build(t)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const client = new Ollama({ host: url })
  t.same(await client.version(), { version: JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')).version })
})
