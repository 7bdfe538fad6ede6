// A key is judged by the model a request reaches: an alias of the same name as a stored model does not reach its
// own model (the stored one wins, docs/api.md: Aliases), so a key allowed the alias's model gets no way to the other.
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { openStore } from '../../../plugins/storage/open-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'

const OPEN_KEY = 'lg-test-open-0000123456789'

t.test('an alias named as a stored model: the key is judged by the stored model, which the request reaches', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, { keys: [{ name: 'open', hash: hashSecret(OPEN_KEY), scopes: ['infer'], models: ['acme/open'], limits: {}, created: new Date().toISOString() }] })
  const modelsDir = join(dir, 'models')
  const store = await openStore(modelsDir)
  for (const name of ['acme/secret', 'acme/open']) {
    const gguf = join(dir, `${name.replace('/', '-')}.gguf`)
    await writeTinyGguf({ file: gguf, name })
    await store.import(name, gguf)
  }
  store.close()
  const app = await buildTestApp(await testConfig(t, { models_dir: modelsDir, auth: { keys_file: keysFile }, models: { 'acme/open': { aliases: ['acme/secret'] } } }))
  t.teardown(() => app.close())
  const post = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${OPEN_KEY}` }, payload })
  const chat = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }

  const ollama = await post('/api/chat', { model: 'acme/secret', ...chat })
  t.equal(ollama.statusCode, 403, '/api/chat: the stored acme/secret, not the alias\'s acme/open')
  t.same(ollama.json(), { error: 'the API key "open" may not use model "acme/secret"' }, 'in Ollama\'s shape')
  const openai = await post('/v1/chat/completions', { model: 'acme/secret', ...chat })
  t.equal(openai.statusCode, 403, '/v1/chat/completions: refused too')
  t.match(openai.json(), { error: { message: 'the API key "open" may not use model "acme/secret"', code: 'permission_denied' } }, 'in OpenAI\'s shape')
  t.equal((await post('/api/show', { model: 'acme/secret' })).statusCode, 403, '/api/show of it')
  const tags = (await app.inject({ method: 'GET', url: '/api/tags', headers: { authorization: `Bearer ${OPEN_KEY}` } })).json() as { models: Array<{ name: string }> }
  t.same(tags.models.map((m) => m.name), ['acme/open'], '/api/tags does not list it')

  // Its own model by its own name: past the guard, to the model (a tiny model refuses `think` before any runtime starts).
  t.equal((await post('/api/show', { model: 'acme/open' })).statusCode, 200, '/api/show of acme/open')
  const own = await post('/api/chat', { model: 'acme/open', ...chat, think: true })
  t.same({ status: own.statusCode, body: own.json() }, { status: 400, body: { error: '"acme/open" does not support thinking' } }, '/api/chat reaches acme/open')
})
