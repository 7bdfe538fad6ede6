import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { sha256File } from '../../../plugins/storage/file-hash.js'
import { writeTinyGguf } from '../../../scripts/tiny-model.js'
import { build, tempDir } from '../../helpers/app.js'
import { CLI } from '../../helpers/serve-process.js'

async function gguf (t: Test, seed = 1, name = 'tiny.gguf'): Promise<string> {
  return (await writeTinyGguf({ file: join(await tempDir(t), name), seed })).file
}

t.test('list, show and delete on real files', async (t) => {
  const app = await build(t)
  await app.store.import('acme/first', await gguf(t, 1))
  await new Promise((r) => setTimeout(r, 5))
  await app.store.import('Acme/Second', await gguf(t, 2))
  const tags = (await app.inject({ method: 'GET', url: '/api/tags' })).json() as { models: any[] }
  t.same(tags.models.map((m) => m.name), ['Acme/Second', 'acme/first'], 'most recently modified first')
  const first = tags.models[1]
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
  t.same(shown.details, first)
  t.equal(shown.model_info['general.architecture'], 'llama')
  t.equal(shown.model_info['llama.context_length'], 2048)
  t.equal(shown.model_info['general.parameter_count'], 154048)
  t.match(shown.template, /<\|im_start\|>/)

  const v1 = (await app.inject({ method: 'GET', url: '/v1/models' })).json()
  t.equal(v1.object, 'list')
  t.same(v1.data.find((m: any) => m.id === 'acme/first'), { id: 'acme/first', object: 'model', created: Math.floor(Date.parse(first.modified_at) / 1000), owned_by: 'acme' })
  const one = await app.inject({ method: 'GET', url: '/v1/models/acme/first' })
  t.equal(one.statusCode, 200)
  t.equal(one.json().id, 'acme/first')

  const dir = app.store.get('acme/first').dir
  const deleted = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/first' } })
  t.same(deleted.json(), { status: 'deleted' })
  t.notOk(existsSync(dir), 'the files are gone')
  t.same((await app.inject({ method: 'GET', url: '/api/tags' })).json().models.map((m: any) => m.name), ['Acme/Second'])
})

t.test('unknown models: 404 in the native shape, and OpenAI\'s under /v1', async (t) => {
  const app = await build(t)
  const del = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/none' } })
  t.equal(del.statusCode, 404)
  t.same(del.json(), { error: 'model "acme/none" not found, pull it first' })
  const show = await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'acme/none' } })
  t.equal(show.statusCode, 404)
  const v1 = await app.inject({ method: 'GET', url: '/v1/models/acme/none' })
  t.equal(v1.statusCode, 404)
  t.same(v1.json(), { error: { message: 'model "acme/none" not found', type: 'invalid_request_error', param: null, code: 'not_found' } })
})

t.test('every bad name is refused with 400 before anything touches the disk', async (t) => {
  const app = await build(t)
  const before = await readdir(app.config.modelsDir)
  const file = await gguf(t)
  const names = ['../x', '../../etc/passwd', '/etc/passwd', 'a/b/c', 'acme', '%2e%2e/x', 'acme/%2e%2e', 'acme/..', '../acme', 'acme/.hidden', 'acme/-x',
    'acme/a\u0000b', `acme/${'x'.repeat(97)}`, `${'o'.repeat(97)}/x`, 'acme/a b', 'acme\\x', 'acme/x:../../y', '']
  for (const model of names) {
    for (const [method, url, payload] of [['POST', '/api/show', { model }], ['DELETE', '/api/delete', { model }], ['POST', '/api/import', { model, path: file }], ['POST', '/api/chat', { model, messages: [{ role: 'user', content: 'x' }] }]] as const) {
      const res = await app.inject({ method, url, payload })
      t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(model)}`)
    }
  }
  t.same(await readdir(app.config.modelsDir), before, 'nothing was created')
})

t.test('a model killed mid-write is not listed after a restart; partial downloads are kept', async (t) => {
  const models = await tempDir(t)
  const half = join(models, 'acme', 'half')
  await mkdir(half, { recursive: true })
  await writeFile(join(half, 'model.gguf'), 'GGUF half of it')
  await writeFile(join(half, 'manifest.json.tmp-999-1'), '{"version":1,"na')
  await writeFile(join(half, 'big.gguf.partial'), Buffer.alloc(1000))
  await writeFile(join(half, 'big.gguf.partial.json'), '{"size":5000}')
  const broken = join(models, 'acme', 'broken')
  await mkdir(broken, { recursive: true })
  await writeFile(join(broken, 'manifest.json'), '{"version":1,"name":')
  const store = new ModelStore(models)
  await store.init()
  t.same(store.list(), [], 'nothing half-written is listed')
  t.same((await readdir(half)).sort(), ['big.gguf.partial', 'big.gguf.partial.json', 'model.gguf'], 'the temp manifest is dropped, partial data kept')
  t.equal(store.find('acme/half'), null)
})

t.test('two processes racing to write one model end with one whole model', async (t) => {
  const models = await tempDir(t)
  const files = [await gguf(t, 1, 'a.gguf'), await gguf(t, 2, 'b.gguf')]
  const runs = files.map((file) => new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [CLI, 'import', 'acme/race', file, '--models', models], { stdio: 'ignore' })
    child.once('exit', resolve)
  }))
  t.same(await Promise.all(runs), [0, 0], 'both finished, one after the other')
  const store = new ModelStore(models)
  await store.init()
  const record = store.get('acme/race')
  const manifest = JSON.parse(await readFile(join(record.dir, 'manifest.json'), 'utf8'))
  t.equal(manifest.files.length, 1)
  const file = join(record.dir, manifest.files[0].name)
  t.equal(await sha256File(file), manifest.files[0].sha256, 'the manifest describes the file that is there')
  t.equal(manifest.primary, manifest.files[0].name)
})

t.test('a stale lock left by a killed process is taken over', async (t) => {
  const models = await tempDir(t)
  const store = new ModelStore(models)
  await store.init()
  const lock = join(models, 'acme', 'stale.lock')
  await mkdir(lock, { recursive: true })
  const old = new Date(Date.now() - 60_000)
  await utimes(lock, old, old)
  const record = await store.import('acme/stale', await gguf(t))
  t.equal(record.name, 'acme/stale')
})

t.test('a held lock makes other writers wait or answer 409; delete during a write is 409', async (t) => {
  const app = await build(t)
  await app.store.import('acme/busy', await gguf(t))
  const writer = await app.store.openWriter('acme/busy')
  const held = await t.rejects(app.store.openWriter('acme/busy'))
  t.equal((held as { statusCode?: number }).statusCode, 409)
  const res = await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/busy' } })
  t.equal(res.statusCode, 409)
  t.match(res.json().error, /being pulled or written/)
  await writer.release()
  t.equal((await app.inject({ method: 'DELETE', url: '/api/delete', payload: { model: 'acme/busy' } })).statusCode, 200)
})

t.test('import: links rather than copies; refuses what is not a GGUF', async (t) => {
  const app = await build(t)
  const file = await gguf(t)
  const record = await app.store.import('acme/linked', file)
  t.equal(record.manifest.source.link, 'hardlink')
  const res = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/text', path: '/etc/hostname' } })
  t.equal(res.statusCode, 400)
  t.match(res.json().error, /not a GGUF file/)
  const missing = await app.inject({ method: 'POST', url: '/api/import', payload: { model: 'acme/none', path: '/nonexistent.gguf' } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json().error, /no such file/)
})
