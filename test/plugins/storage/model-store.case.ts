import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { copyFile, lstat, mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { gguf as parseGguf } from '@huggingface/gguf'
import t, { type Test } from 'tap'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { until } from '../../helpers/until.js'

const WRITER = fileURLToPath(new URL('./writer-process.ts', import.meta.url))

/** A file's SHA-256, computed here (not by the store's own hashing, which the expectations check). */
async function sha256File (file: string): Promise<string> {
  return createHash('sha256').update(await readFile(file)).digest('hex')
}

async function gguf (t: Test, seed = 1, name = 'tiny.gguf'): Promise<string> {
  return (await writeTinyGguf({ file: join(await tempDir(t), name), seed })).file
}

async function openStore (t: Test, models?: string, options: ConstructorParameters<typeof ModelStore>[1] = {}): Promise<ModelStore> {
  const store = new ModelStore(models ?? await tempDir(t), options)
  await store.init()
  t.teardown(() => store.close())
  return store
}

interface WriterEvent { pid: number, event: string, at?: number, sha256?: string, message?: string }

/** Starts writer-process.ts as another node process; `events` resolves with its JSON lines once it exits. */
function startWriter (t: Test, models: string, id: string, mode: 'commit' | 'try' | 'hang', source: string) {
  const child = spawn(process.execPath, [...process.execArgv, WRITER, models, id, mode, source], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  let out = ''
  let err = ''
  const lines: WriterEvent[] = []
  const waiters: Array<{ event: string, resolve: (e: WriterEvent) => void }> = []
  child.stdout.on('data', (d) => {
    out += d
    let nl
    while ((nl = out.indexOf('\n')) !== -1) {
      const event = JSON.parse(out.slice(0, nl)) as WriterEvent
      out = out.slice(nl + 1)
      lines.push(event)
      for (const w of waiters.filter((w) => w.event === event.event)) w.resolve(event)
    }
  })
  child.stderr.on('data', (d) => { err += d })
  const exited = new Promise<{ code: number | null, events: WriterEvent[], stderr: string }>((resolve) => {
    child.once('exit', (code) => resolve({ code, events: lines, stderr: err }))
  })
  const next = (event: string): Promise<WriterEvent> => new Promise((resolve, reject) => {
    waiters.push({ event, resolve })
    exited.then(({ code, stderr }) => reject(new Error(`the writer exited (${code}) before "${event}": ${stderr}`)))
  })
  return { child, exited, next }
}

t.test('a model killed mid-write is not listed after a restart; partial downloads are kept', async (t) => {
  const models = await tempDir(t)
  const half = join(models, 'acme', 'half')
  await mkdir(half, { recursive: true })
  await writeFile(join(half, 'model.gguf'), 'GGUF half of it')
  await writeFile(join(half, 'manifest.json.tmp-2147483647-1'), '{"version":1,"na')
  await writeFile(join(half, 'big.gguf.partial'), Buffer.alloc(1000))
  await writeFile(join(half, 'big.gguf.partial.json'), '{"size":5000}')
  const broken = join(models, 'acme', 'broken')
  await mkdir(broken, { recursive: true })
  await writeFile(join(broken, 'manifest.json'), '{"version":1,"name":')
  const odd = join(models, 'acme', 'odd')
  await mkdir(odd, { recursive: true })
  await writeFile(join(odd, 'manifest.json'), JSON.stringify({ version: 1, name: 'acme/odd', format: 'gguf' }))
  const elsewhere = join(models, 'acme', 'elsewhere')
  await mkdir(elsewhere, { recursive: true })
  await writeFile(join(elsewhere, 'manifest.json'), JSON.stringify({ version: 1, name: '../../etc', format: 'gguf', files: [], variants: [], primary: null, modified_at: new Date().toISOString() }))
  const warnings: string[] = []
  const store = await openStore(t, models, { onWarning: (m) => warnings.push(m) })
  t.same(store.list(), [], 'nothing half-written, broken, incomplete or misnamed is listed')
  t.same((await readdir(half)).sort(), ['big.gguf.partial', 'big.gguf.partial.json', 'model.gguf'], 'the temp manifest is dropped, partial data kept')
  t.equal(store.find('acme/half'), null)
  t.match(warnings, [/names "\.\.\/\.\.\/etc", not acme\/elsewhere; skipped/])
})

t.test('a writer process killed mid-write: nothing listed, its lock is taken over once stale', async (t) => {
  const models = await tempDir(t)
  const source = await gguf(t)
  const writer = startWriter(t, models, 'acme/killed', 'hang', source)
  await writer.next('holding')
  writer.child.kill('SIGKILL')
  await writer.exited
  const store = await openStore(t, models, { lockStaleMs: 2000 })
  t.same(store.list(), [], 'the half-written model is not listed')
  t.ok(existsSync(join(models, '.llamagate', 'locks', 'acme@killed.lock')), 'the dead writer\'s lock is still there')
  const started = Date.now()
  const w = await store.openWriter('acme/killed', { wait: true })
  const waited = Date.now() - started
  // Stale after 2 s of no refresh; 15 s leaves a loaded machine room and still tells it from waiting forever.
  t.ok(waited < 15_000, `taken over once stale (${waited} ms)`)
  t.equal(w.existing, null)
  await copyFile(source, join(w.dir, 'model.gguf'))
  const record = await w.commit({ name: 'acme/killed', format: 'gguf', source: { type: 'import' }, files: [{ name: 'model.gguf', size: (await stat(source)).size, sha256: await sha256File(source) }], primary: 'model.gguf' })
  await w.release()
  t.equal(store.get('acme/killed').digest, record.digest)
})

t.test('two processes racing to write one model end with one whole model, one after the other', async (t) => {
  const models = await tempDir(t)
  const sources = [await gguf(t, 1, 'a.gguf'), await gguf(t, 2, 'b.gguf')]
  const shas = await Promise.all(sources.map(sha256File))
  t.not(shas[0], shas[1])
  const runs = await Promise.all(sources.map((s) => startWriter(t, models, 'acme/race', 'commit', s).exited))
  t.same(runs.map((r) => r.code), [0, 0], `both finished: ${runs.map((r) => r.stderr).join('')}`)
  const [first, second] = runs.map((r) => ({ locked: r.events.find((e) => e.event === 'locked')!.at!, committed: r.events.find((e) => e.event === 'committed')! })).sort((a, b) => a.locked - b.locked) as [any, any]
  t.ok(first.committed.at <= second.locked, 'the second took the lock only after the first had committed')
  const store = await openStore(t, models)
  const record = store.get('acme/race')
  const manifest = JSON.parse(await readFile(join(record.dir, 'manifest.json'), 'utf8'))
  t.same(manifest.files.map((f: { name: string }) => f.name), ['model.gguf'])
  const onDisk = await sha256File(join(record.dir, 'model.gguf'))
  t.equal(onDisk, manifest.files[0].sha256, 'the manifest describes the file that is there')
  t.equal(onDisk, second.committed.sha256, 'the last writer won, whole')
  t.ok(shas.includes(onDisk), 'the bytes are one source\'s, not a mix')
  const { metadata } = await parseGguf(join(record.dir, 'model.gguf'), { allowLocalFile: true })
  t.equal(metadata['general.architecture'], 'llama', 'and it reads as a GGUF')
})

t.test('a held lock: another process answers 409 without waiting; this process too', async (t) => {
  const models = await tempDir(t)
  const source = await gguf(t)
  const holder = startWriter(t, models, 'acme/held', 'hang', source)
  await holder.next('holding')
  const other = await startWriter(t, models, 'ACME/Held', 'try', source).exited
  t.equal(other.code, 3, 'the lock is per model whatever the case')
  t.match(other.events[0]?.message, /being pulled or written by another process/)
  const store = await openStore(t, models)
  const err = await store.openWriter('acme/held').then(() => null, (e: { statusCode?: number }) => e)
  t.equal(err?.statusCode, 409)
  t.same(await readdir(join(models, 'acme')), ['held'], 'one folder, not one per spelling')
})

t.test('a stale lock left by a killed process is taken over at once', async (t) => {
  const models = await tempDir(t)
  const store = await openStore(t, models)
  const lock = join(models, '.llamagate', 'locks', 'acme@stale.lock')
  await mkdir(lock, { recursive: true })
  const old = new Date(Date.now() - 60_000)
  await utimes(lock, old, old)
  const record = await store.import('acme/stale', await gguf(t))
  t.equal(record.name, 'acme/stale')
  t.notOk(existsSync(lock), 'released after the import')
})

t.test('a writer that lost its lock cannot commit', async (t) => {
  const models = await tempDir(t)
  const store = await openStore(t, models, { lockStaleMs: 2000 })
  const writer = await store.openWriter('acme/lost')
  await copyFile(await gguf(t), join(writer.dir, 'model.gguf'))
  // Someone removed the lock (as a taker-over of a "stale" one would): the next refresh finds out.
  await rm(join(models, '.llamagate', 'locks', 'acme@lost.lock'), { recursive: true })
  // The lock is refreshed every second (half of lockStaleMs) and the store tells no one when a refresh finds it
  // gone: three refresh periods leave a loaded machine room for one to have run.
  await new Promise((r) => setTimeout(r, 3500))
  const err = await writer.commit({ name: 'acme/lost', format: 'gguf', source: { type: 'import' }, files: [{ name: 'model.gguf', size: 1, sha256: null }], primary: 'model.gguf' }).then(() => null, (e: Error & { statusCode?: number }) => e)
  t.equal(err?.statusCode, 409)
  t.match(err?.message, /lost the write lock/)
  await writer.release()
  t.equal(store.find('acme/lost'), null)
  t.notOk(existsSync(join(writer.dir, 'manifest.json')))
})

t.test('a commit is refused when a file its manifest names is not there; nothing is listed', async (t) => {
  const store = await openStore(t)
  const writer = await store.openWriter('acme/half')
  await copyFile(await gguf(t), join(writer.dir, 'model.gguf'))
  const files = [{ name: 'model.gguf', size: 1, sha256: null }, { name: 'model-00002-of-00002.gguf', size: 1, sha256: null }]
  const err = await writer.commit({ name: 'acme/half', format: 'gguf', source: { type: 'import' }, files, primary: 'model.gguf' }).then(() => null, (e: NodeJS.ErrnoException) => e)
  t.equal(err?.code, 'ENOENT', 'the files are synced to disk before the manifest, so a missing one is found then')
  await writer.release()
  t.equal(store.find('acme/half'), null)
  t.notOk(existsSync(join(writer.dir, 'manifest.json')))
})

t.test('lookup is case-insensitive, and so is the folder a writer lands in', async (t) => {
  const store = await openStore(t)
  await store.import('Acme/Foo', await gguf(t))
  t.equal(store.get('acme/foo').name, 'Acme/Foo')
  t.equal(store.get('ACME/FOO:Q8_0').name, 'Acme/Foo', 'a :tag is ignored for lookup')
  t.equal(store.modelDir('acme/FOO'), join(store.modelsDir, 'Acme', 'Foo'))
  const writer = await store.openWriter('acme/foo')
  t.equal(writer.dir, join(store.modelsDir, 'Acme', 'Foo'))
  t.equal(writer.existing?.name, 'Acme/Foo')
  t.ok(store.isBusy('ACME/foo'))
  await writer.release()
  await writer.release()
  t.notOk(store.isBusy('acme/foo'), 'release is idempotent')
  t.same(await readdir(store.modelsDir), ['.llamagate', 'Acme'])
})

t.test('import: links rather than copies, says so, and re-importing replaces the file', async (t) => {
  const store = await openStore(t)
  const first = await gguf(t, 1, 'first.gguf')
  const record = await store.import('acme/linked', first)
  t.equal(record.manifest.source.link, 'hardlink')
  t.equal(record.manifest.source.type, 'import')
  t.equal(record.manifest.source.path, first)
  const linked = join(record.dir, 'first.gguf')
  t.equal((await stat(linked)).ino, (await stat(first)).ino, 'the same inode: no copy')
  t.equal(record.files[0]?.sha256, await sha256File(first))
  t.equal(store.ggufPath(record), linked)
  t.equal(record.gguf?.architecture, 'llama')
  t.ok(record.gguf!.block_count! > 0 && record.gguf!.embedding_length! > 0 && record.gguf!.head_count! > 0, 'shape for KV-cache estimates')
  const second = await gguf(t, 2, 'second.gguf')
  const again = await store.import('acme/linked', second)
  t.same(await readdir(again.dir).then((e) => e.sort()), ['manifest.json', 'second.gguf'], 'the old file is gone with the old manifest')
  t.not(again.digest, record.digest)
  const inPlace = await store.import('acme/linked', join(again.dir, 'second.gguf'))
  t.equal(inPlace.manifest.source.link, 'in-place', 'importing the model\'s own file keeps it')
  t.ok(existsSync(join(again.dir, 'second.gguf')))
})

t.test('import: a symbolic link to a GGUF elsewhere, and split GGUFs with all their parts', async (t) => {
  const store = await openStore(t)
  const dir = await tempDir(t)
  const file = await gguf(t)
  await symlink(file, join(dir, 'via-link.gguf'))
  t.equal((await store.import('acme/via-link', join(dir, 'via-link.gguf'))).name, 'acme/via-link')
  for (let i = 1; i <= 3; i++) await copyFile(file, join(dir, `big-0000${i}-of-00003.gguf`))
  const split = await store.import('acme/split', join(dir, 'big-00001-of-00003.gguf'))
  t.same(split.files.map((f) => f.name), ['big-00001-of-00003.gguf', 'big-00002-of-00003.gguf', 'big-00003-of-00003.gguf'])
  t.equal(store.ggufPath(split), join(split.dir, 'big-00001-of-00003.gguf'), 'llama-server opens the first part')
  await t.rejects(store.import('acme/split2', join(dir, 'big-00002-of-00003.gguf')), { statusCode: 400, message: /part 2 of a split GGUF: import the first part/ })
  await rm(join(dir, 'big-00003-of-00003.gguf'))
  await t.rejects(store.import('acme/split3', join(dir, 'big-00001-of-00003.gguf')), { statusCode: 400, message: /part 3 of 00003 .* is missing/ })
  t.equal(store.find('acme/split3'), null)
})

t.test('import refuses what is not a GGUF, a folder, a missing file; bad names before any disk access', async (t) => {
  const store = await openStore(t)
  const dir = await tempDir(t)
  await writeFile(join(dir, 'text.gguf'), 'not a gguf at all, just text')
  await t.rejects(store.import('acme/text', join(dir, 'text.gguf')), { statusCode: 400, message: /not a GGUF file/ })
  await t.rejects(store.import('acme/dir', dir), { statusCode: 400, message: /not a file/ })
  await t.rejects(store.import('acme/none', join(dir, 'none.gguf')), { statusCode: 400, message: /no such file/ })
  const before = await readdir(store.modelsDir)
  await t.rejects(store.import('../escape', await gguf(t)), { statusCode: 400, message: /invalid model name/ })
  t.same(await readdir(store.modelsDir), before, 'nothing created')
  t.same(store.list(), [])
})

t.test('variants: added under the lock, replaced by dtype, dropped when the weights change', async (t) => {
  const store = await openStore(t)
  const writer = await store.openWriter('acme/st')
  await writeFile(join(writer.dir, 'model.safetensors'), 'weights v1')
  await writer.commit({ name: 'acme/st', format: 'safetensors', source: { type: 'hub', repository: 'acme/st', commit: 'c1' }, files: [{ name: 'model.safetensors', size: 10, sha256: 'a'.repeat(64) }], primary: null })
  await writer.release()
  let record = store.get('acme/st')
  t.equal(store.ggufPath(record, 'f16'), null, 'not converted yet')
  t.equal(record.gguf, null)
  await copyFile(await gguf(t), join(record.dir, 'model-f16.gguf'))
  record = await store.addVariant('acme/st', { dtype: 'f16', file: 'model-f16.gguf', size: 5, sha256: null })
  t.equal(store.ggufPath(record, 'f16'), join(record.dir, 'model-f16.gguf'))
  t.equal(record.gguf?.architecture, 'llama', 'GGUF metadata of a SafeTensors model comes from its variant')
  t.equal(record.size, 15, 'variants count in the size')
  await copyFile(await gguf(t, 3), join(record.dir, 'model-f16b.gguf'))
  record = await store.addVariant('acme/st', { dtype: 'f16', file: 'model-f16b.gguf', size: 6, sha256: null })
  t.same(record.variants.map((v) => v.file), ['model-f16b.gguf'], 'one per dtype')
  t.notOk(existsSync(join(record.dir, 'model-f16.gguf')), 'the replaced file is removed')
  // The same files again (a pull that found nothing new) keeps the variants; new weights drop them.
  const same = await store.openWriter('acme/st')
  await same.commit({ ...same.existing!, source: { type: 'hub', repository: 'acme/st', commit: 'c1' } })
  await same.release()
  t.equal(store.get('acme/st').variants.length, 1)
  const changed = await store.openWriter('acme/st')
  await writeFile(join(changed.dir, 'model.safetensors'), 'weights v2')
  await changed.commit({ name: 'acme/st', format: 'safetensors', source: { type: 'hub', repository: 'acme/st', commit: 'c2' }, files: [{ name: 'model.safetensors', size: 10, sha256: 'b'.repeat(64) }], primary: null })
  await changed.release()
  t.same(store.get('acme/st').variants, [], 'conversions of the old weights are dropped')
  t.notOk(existsSync(join(record.dir, 'model-f16b.gguf')))
  await t.rejects(store.addVariant('acme/none', { dtype: 'f16', file: 'x.gguf', size: 1, sha256: null }), { statusCode: 404, message: /not found/ })
})

t.test('commit refuses a manifest naming files outside the folder, and a GGUF that does not parse', async (t) => {
  const store = await openStore(t)
  const writer = await store.openWriter('acme/evil')
  t.teardown(() => writer.release())
  for (const name of ['../x.gguf', '/etc/passwd', 'a/../../x']) {
    await t.rejects(writer.commit({ name: 'acme/evil', format: 'gguf', source: { type: 'import' }, files: [{ name, size: 1, sha256: null }], primary: name }), { message: /outside its folder/ }, name)
  }
  await writeFile(join(writer.dir, 'bad.gguf'), 'GGUF but not really')
  await t.rejects(writer.commit({ name: 'acme/evil', format: 'gguf', source: { type: 'import' }, files: [{ name: 'bad.gguf', size: 1, sha256: null }], primary: 'bad.gguf' }), { statusCode: 422, message: /not a readable GGUF/ })
  await t.rejects(writer.commit({ name: 'acme/other', format: 'gguf', source: { type: 'import' }, files: [], primary: null }), { message: /cannot commit "acme\/other"/ })
  t.notOk(existsSync(join(writer.dir, 'manifest.json')), 'nothing was committed')
  t.equal(store.find('acme/evil'), null)
})

t.test('delete: listeners first, then files and the empty owner folder gone; 404 and 409', async (t) => {
  const store = await openStore(t)
  await store.import('solo/one', await gguf(t))
  await store.import('pair/one', await gguf(t))
  await store.import('pair/two', await gguf(t, 2))
  const seen: Array<{ id: string, listed: boolean, files: boolean }> = []
  store.onBeforeDelete(async (id) => { seen.push({ id, listed: store.find(id) !== null, files: existsSync(store.modelDir(id)) }) })
  const dir = store.get('solo/one').dir
  await store.delete('SOLO/one')
  t.same(seen, [{ id: 'solo/one', listed: true, files: true }], 'unloaded while its files are still there (and it is listed, for the scheduler to look it up)')
  t.notOk(existsSync(dir))
  t.notOk(existsSync(join(store.modelsDir, 'solo')), 'the empty owner folder went too')
  await store.delete('pair/one')
  t.ok(existsSync(join(store.modelsDir, 'pair', 'two')), 'a sibling stays')
  await t.rejects(store.delete('pair/one'), { statusCode: 404, message: 'model "pair/one" not found, pull it first' })
  const pulling = await store.openWriter('new/pulling')
  await t.rejects(store.delete('new/pulling'), { statusCode: 409, message: /being pulled or written/ }, 'a first pull is not listed yet, still a conflict')
  await pulling.release()
  const failing = await openStore(t)
  await failing.import('acme/keep', await gguf(t))
  failing.onBeforeDelete(async () => { throw new Error('could not unload') })
  await t.rejects(failing.delete('acme/keep'), { message: 'could not unload' })
  t.ok(failing.find('acme/keep'), 'a failed unload leaves the model listed')
  t.ok((await lstat(failing.get('acme/keep').dir)).isDirectory())
})

t.test('list: most recently modified first, from memory', async (t) => {
  const store = await openStore(t)
  const file = await gguf(t)
  for (const name of ['acme/a', 'acme/b', 'acme/c']) {
    const { modified_at: modified } = await store.import(name, file)
    // The next import is modified later: the clock has moved past this one's millisecond.
    await until('the clock to pass the last modification', () => Date.now() > Date.parse(modified), 5000, 1)
  }
  t.same(store.list().map((r) => r.name), ['acme/c', 'acme/b', 'acme/a'])
  t.equal(store.list(), store.list(), 'the same cached array until something changes')
  const restarted = await openStore(t, store.modelsDir)
  t.same(restarted.list().map((r) => r.name), ['acme/c', 'acme/b', 'acme/a'], 'the same after a restart')
  t.same(restarted.get('acme/a').digest, store.get('acme/a').digest)
})
