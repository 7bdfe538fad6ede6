import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { request } from 'node:http'
import { basename, join } from 'node:path'
import t, { type Test } from 'tap'
import { writeTinyProjector } from '../../../scripts/fixtures/realistic-projector.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { CLI, runCli } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'

async function gguf (t: Test, seed = 1, name = 'tiny.gguf'): Promise<string> {
  return (await writeTinyGguf({ file: join(await tempDir(t), name), seed })).file
}

/** GET with the path sent exactly as written (fetch and inject would normalise `..` and `%2e`). */
function rawGet (base: string, path: string): Promise<{ status: number, body: any }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    request({ hostname, port, path, method: 'GET' }, (res) => {
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }))
    }).on('error', reject).end()
  })
}

t.test('list, show and delete on real files', async (t) => {
  const app = await build(t)
  const { modified_at: firstModified } = await app.store.import('acme/first', await gguf(t, 1))
  await until('the clock to pass the first import', () => Date.now() > Date.parse(firstModified), 5000, 1)
  await app.store.import('Acme/Second', await gguf(t, 2))
  const tags = (await app.inject({ method: 'GET', url: '/api/tags' })).json() as { models: any[] }
  t.same(tags.models.map((m) => m.name), ['Acme/Second', 'acme/first'], 'most recently modified first')
  const [second, first] = tags.models
  t.same(Object.keys(first).sort(), ['capabilities', 'details', 'digest', 'format', 'model', 'modified_at', 'name', 'size'], 'no internal fields leak')
  t.same(first.capabilities, ['completion'], 'what it can do, as /api/show says')
  t.equal(first.model, 'acme/first')
  t.equal(first.format, 'gguf')
  t.match(first.modified_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.ok(first.size > 100_000 && first.size < 1_000_000)
  t.match(first.digest, /^[0-9a-f]{64}$/)
  t.same(first.details, { parent_model: '', format: 'gguf', family: 'llama', families: ['llama'], parameter_size: '154.0K', quantization_level: 'F16' })

  const show = await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'ACME/FIRST' } })
  t.equal(show.statusCode, 200, 'lookup is case-insensitive')
  const shown = show.json()
  t.equal(shown.modelfile, '')
  const { details: nested, capabilities: _listed, ...record } = first
  t.same(shown.details, { ...record, ...nested }, 'details carry the record of §2.2 and Ollama\'s flat details (family at details.family)')
  t.same(shown.capabilities, ['completion'], 'the tiny template renders neither tools nor reasoning')
  t.equal(shown.parameters, '', 'config.yaml sets no options for it')
  t.same(shown.model_info['tokenizer.ggml.tokens'], [], 'the long token list is left out')
  t.equal(shown.model_info['tokenizer.ggml.model'], 'llama', 'the whole header is there, not only what the store keeps')
  const verbose = (await app.inject({ method: 'POST', url: '/api/show', payload: { name: 'acme/first', verbose: true } })).json()
  t.ok(verbose.model_info['tokenizer.ggml.tokens'].length > 100, 'verbose keeps it (and the old `name` field is read)')
  t.equal(shown.model_info['general.architecture'], 'llama')
  t.equal(shown.model_info['llama.context_length'], 2048)
  t.equal(shown.model_info['general.parameter_count'], 154048)
  t.equal(shown.model_info['general.file_type'], 'F16')
  t.ok(shown.model_info['llama.block_count'] > 0)
  t.match(shown.model_info['tokenizer.chat_template'], /<\|im_start\|>/)
  t.match(shown.template, /<\|im_start\|>/)

  const v1 = (await app.inject({ method: 'GET', url: '/v1/models' })).json()
  t.equal(v1.object, 'list')
  t.same(v1.data.map((m: any) => m.id), ['Acme/Second', 'acme/first'])
  // Its context window: the trained 2048 (not loaded, so what the context grows to), under the names agents read.
  const size = app.store.get('acme/first').size
  t.same(v1.data[1], {
    id: 'acme/first', object: 'model', created: Math.floor(Date.parse(first.modified_at) / 1000), owned_by: 'acme',
    context_window: 2048, max_context_length: 2048, meta: { n_ctx: 2048, n_ctx_train: 2048, n_params: app.store.get('acme/first').gguf!.parameter_count, size },
    capabilities: ['completion'], architecture: { input_modalities: ['text'], output_modalities: ['text'] },
  })
  t.same(v1.models.map((m: any) => [m.name, m.release_date, m.description]), [['Acme/Second', second.modified_at.slice(0, 10), 'llama model'], ['acme/first', first.modified_at.slice(0, 10), 'llama model']], 'the TypeSafe SDK\'s model cards beside OpenAI\'s data')
  const one = await app.inject({ method: 'GET', url: '/v1/models/acme/first' })
  t.equal(one.statusCode, 200)
  t.same(one.json(), v1.data[1])
  t.equal((await app.inject({ method: 'GET', url: '/v1/models/ACME/second' })).json().id, 'Acme/Second')

  const dir = app.store.get('acme/first').dir
  const deleted = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/first' } })
  t.equal(deleted.statusCode, 200)
  t.same(deleted.json(), { status: 'deleted' })
  t.notOk(existsSync(dir), 'the files are gone')
  t.same((await app.inject({ method: 'GET', url: '/api/tags' })).json().models.map((m: any) => m.name), ['Acme/Second'])
  t.equal((await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/first' } })).statusCode, 404)
})

t.test('an empty store lists nothing', async (t) => {
  const app = await build(t)
  t.same((await app.inject({ method: 'GET', url: '/api/tags' })).json(), { models: [] })
  t.same((await app.inject({ method: 'GET', url: '/v1/models' })).json(), { object: 'list', data: [], models: [] })
})

t.test('unknown models: 404 in the native shape, and OpenAI\'s under /v1', async (t) => {
  const app = await build(t)
  const del = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/none' } })
  t.equal(del.statusCode, 404)
  t.same(del.json(), { error: 'model "acme/none" not found, pull it first' })
  const show = await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/none' } })
  t.equal(show.statusCode, 404)
  t.same(show.json(), { error: 'model "acme/none" not found, pull it first' })
  const v1 = await app.inject({ method: 'GET', url: '/v1/models/acme/none' })
  t.equal(v1.statusCode, 404)
  t.same(v1.json(), { error: { message: 'model "acme/none" not found', type: 'invalid_request_error', param: null, code: 'not_found' } })
})

t.test('malformed bodies are 400 in the native shape', async (t) => {
  const app = await build(t)
  for (const [method, url, payload] of [['POST', '/api/show', {}], ['DELETE', '/api/delete', { model: 7 }], ['POST', '/api/import', { model: 'acme/x' }], ['POST', '/api/show', { model: '' }]] as const) {
    const res = await app.inject({ method, url, payload })
    t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(payload)}`)
    t.type(res.json().error, 'string')
  }
})

t.test('every bad name is refused with 400 before anything touches the disk', async (t) => {
  const app = await build(t)
  const before = await readdir(app.config.modelsDir, { recursive: true })
  const file = await gguf(t)
  const names = ['../x', '../../etc/passwd', '/etc/passwd', 'a/b/c', 'acme', '%2e%2e/x', 'acme/%2e%2e', 'acme/..', '../acme', 'acme/.hidden', 'acme/-x',
    'acme/a\u0000b', `acme/${'x'.repeat(97)}`, `${'o'.repeat(97)}/x`, 'acme/a b', 'acme\\x', 'acme/x:../../y', 'acme/x:a/b', '.', 'acme/']
  for (const model of names) {
    for (const [method, url, payload] of [['POST', '/api/show', { model }], ['DELETE', '/api/delete', { model }], ['POST', '/api/import', { model, path: file }]] as const) {
      const res = await app.inject({ method, url, payload })
      t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(model)}`)
      t.match(res.json(), { error: /invalid model name|must NOT have fewer/ })
    }
  }
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  for (const path of ['/v1/models/a/b/c', '/v1/models/acme', '/v1/models/../x', '/v1/models/%2e%2e/x', '/v1/models/acme/%2e%2e', '/v1/models/acme/%252e%252e', '/v1/models/acme/a%00b', '/v1/models/%2Fetc%2Fpasswd', `/v1/models/acme/${'x'.repeat(97)}`]) {
    const res = await rawGet(url, path)
    t.equal(res.status, 400, path)
    t.match(res.body, { error: { message: /invalid model name/, type: 'invalid_request_error' } }, `${path}: OpenAI's shape`)
  }
  t.same(await readdir(app.config.modelsDir, { recursive: true }), before, 'nothing was created')
})

t.test('POST /api/import registers a GGUF already on disk, the same as the CLI', async (t) => {
  const app = await build(t)
  const file = await gguf(t)
  const res = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/imported', path: file } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { name: 'acme/imported', model: 'acme/imported', format: 'gguf', details: { family: 'llama' } })
  t.equal(app.store.get('acme/imported').manifest.source.link, 'hardlink')
  const text = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/text', path: '/etc/hostname' } })
  t.equal(text.statusCode, 400)
  t.match(text.json().error, /not a GGUF file/)
  const missing = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/none', path: '/nonexistent.gguf' } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json().error, /no such file/)
  t.same((await app.inject({ method: 'GET', url: '/api/tags' })).json().models.map((m: any) => m.name), ['acme/imported'])
})

t.test('delete while the model is being written (pulled) is 409; after it, 200', async (t) => {
  const app = await build(t)
  await app.store.import('acme/busy', await gguf(t))
  const writer = await app.store.openWriter('acme/busy')
  const res = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'ACME/busy' } })
  t.equal(res.statusCode, 409)
  t.match(res.json().error, /being pulled or written/)
  const first = await app.store.openWriter('acme/first-pull')
  const unlisted = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/first-pull' } })
  t.equal(unlisted.statusCode, 409, 'a first pull is not listed yet; still a conflict, not a 404')
  await first.release()
  await writer.release()
  t.equal((await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/busy' } })).statusCode, 200)
})

t.test('the CLI imports into the folder of a running server, which lists it without a restart', async (t) => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  const app = await build(t)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const models = app.config.modelsDir
  const file = await gguf(t)
  const done = await runCli(['import', 'acme/from-cli', file, '--models', models])
  t.equal(done.code, 0, done.stderr)
  t.match(done.stdout, /imported acme\/from-cli \(\d+ bytes, hardlink\)/)
  await until('the server lists the imported model', async () => {
    const tags = await (await fetch(`${url}/api/tags`)).json() as { models: Array<{ name: string }> }
    return tags.models.some((m) => m.name === 'acme/from-cli')
  })
  t.pass('listed by the running server')
  const chat = await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/from-cli' } })
  t.equal(chat.statusCode, 200)
  // A deletion by this server shows in another process's store too; here: the CLI's next import.
  t.equal((await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/from-cli' } })).statusCode, 200)
  const bad = await runCli(['import', '../escape', file, '--models', models])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /invalid model name/)
  t.notOk(existsSync(join(models, '..', 'escape')))
  const usage = await runCli(['import', 'acme/x'])
  t.equal(usage.code, 2)
  t.match(usage.stderr, /expected <owner>\/<name> <file.gguf>/)
  const notGguf = await runCli(['import', 'acme/x', '/etc/hostname', '--models', models])
  t.equal(notGguf.code, 1)
  t.match(notGguf.stderr, /not a GGUF file/)
})

t.test('delete of a loaded model unloads it first (the real runtime), then removes its files', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'])
  const res = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, options: { max_tokens: 2 } })
  t.equal(res.status, 200)
  const ps = async (): Promise<Array<{ name: string, pid: number }>> => ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string, pid: number }> }).models
  const [loaded] = await ps()
  t.equal(loaded?.name, 'acme/tiny')
  const dir = app.store.get('acme/tiny').dir
  const del = await fetch(`${url}/api/delete`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/tiny' }) })
  t.same(await del.json(), { status: 'deleted' })
  t.same(await ps(), [], 'unloaded')
  let alive = true
  try { process.kill(loaded!.pid, 0) } catch { alive = false }
  t.notOk(alive, 'the llama-server process is gone')
  t.notOk(existsSync(dir), 'the files are gone')
  const after = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false })
  t.equal(after.status, 404)
})

t.test('import with a vision projector: by /api/import and by the CLI; a file that is no projector is refused', async (t) => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  const app = await build(t)
  const dir = await tempDir(t)
  const model = await gguf(t)
  const { file: projector } = await writeTinyProjector({ file: join(dir, 'mmproj-tiny-F16.gguf'), textEmbd: 64 })
  const imported = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/seeing', path: model, projector } })
  t.equal(imported.statusCode, 200, imported.body)
  const record = app.store.get('acme/seeing')
  t.equal(record.projector, 'mmproj-tiny-F16.gguf')
  t.same((await readdir(record.dir)).sort(), ['manifest.json', 'mmproj-tiny-F16.gguf', basename(model)].sort(), 'the projector sits beside the model')
  const show = await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/seeing' } })
  t.ok(show.json().capabilities.includes('vision'))
  const copied = await app.inject({ method: 'POST', url: '/api/copy', payload: { source: 'acme/seeing', destination: 'acme/seeing-too' } })
  t.equal(copied.statusCode, 200)
  t.equal(app.store.get('acme/seeing-too').projector, 'mmproj-tiny-F16.gguf', 'a copy keeps the projector')

  const notProjector = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/blind', path: model, projector: model } })
  t.equal(notProjector.statusCode, 400, 'the model file itself as its projector')
  const chatAsProjector = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/blind', path: model, projector: await gguf(t, 2, 'mmproj-fake.gguf') } })
  t.equal(chatAsProjector.statusCode, 422)
  t.match(chatAsProjector.json(), { error: /is not a projector \(its architecture is llama, not clip\)/ })
  const missing = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/blind', path: model, projector: join(dir, 'nope.gguf') } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { error: /cannot import .*nope\.gguf: no such file/ })
  t.equal(app.store.find('acme/blind'), null, 'nothing half-made is listed')

  const cli = await runCli(['import', 'acme/from-cli', model, '--mmproj', projector, '--models', app.config.modelsDir])
  t.equal(cli.code, 0, cli.stderr)
  await until('the server lists the model the CLI imported', async () => app.store.find('acme/from-cli') !== null)
  t.equal(app.store.get('acme/from-cli').projector, 'mmproj-tiny-F16.gguf', 'llamagate import --mmproj')
})
