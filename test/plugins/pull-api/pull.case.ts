import { existsSync } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import t, { type Test } from 'tap'
import { writeTinyProjector } from '../../../scripts/fixtures/realistic-projector.js'
import { build, buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { FakeHub, sha256 } from '../../helpers/fake-hub.js'
import { once } from '../../helpers/once.js'
import { until } from '../../helpers/until.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'

/** The SHA-256 of a file of a fake repository: the CDN's key. */
function shaOf (fake: FakeHub, repo: string, path: string): string {
  return sha256(fake.repos.get(repo)!.files.find((f) => f.path === path)!.content)
}

/** The vision repository's two projectors, generated once for the file (each hub serves the same bytes). */
const projectors = once(async () => {
  const write = async (seed: number): Promise<Buffer> => readFile((await writeTinyProjector({ file: join(await tempDir(t), 'p.gguf'), textEmbd: 64, seed })).file)
  return [await write(1), await write(2)] as const
})

async function hub (t: Test): Promise<FakeHub> {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  const [q4, q8, q2] = [await tinyGgufBytes(t, 1), await tinyGgufBytes(t, 2), await tinyGgufBytes(t, 3)]
  fake.addRepo('acme/tiny-GGUF', { files: [
    { path: 'README.md', content: Buffer.from('# tiny'), lfs: false },
    { path: 'tiny-Q2_K.gguf', content: q2 }, { path: 'tiny-Q4_K_M.gguf', content: q4 }, { path: 'tiny-Q8_0.gguf', content: q8 },
  ] })
  const [projector1, projector2] = await projectors()
  fake.addRepo('acme/vision-GGUF', { files: [
    { path: 'vision-Q4_K_M.gguf', content: q4 }, { path: 'vision-Q8_0.gguf', content: q8 },
    { path: 'mmproj-vision-Q8_0.gguf', content: projector1 }, { path: 'mmproj-vision-F16.gguf', content: projector2 },
  ] })
  fake.addRepo('acme/badproj-GGUF', { files: [{ path: 'b-Q4_K_M.gguf', content: q4 }, { path: 'mmproj-b-F16.gguf', content: q8 }] })
  fake.addRepo('acme/small-GGUF', { files: [{ path: 'tiny-Q6_K.gguf', content: q8 }, { path: 'tiny-Q2_K.gguf', content: q2 }] })
  fake.addRepo('acme/split-GGUF', { files: [
    { path: 'big-Q4_K_M-00001-of-00003.gguf', content: q4 },
    { path: 'big-Q4_K_M-00002-of-00003.gguf', content: Buffer.alloc(5000, 2) },
    { path: 'big-Q4_K_M-00003-of-00003.gguf', content: Buffer.alloc(3000, 3) },
  ] })
  fake.addRepo('acme/tiny-st', { files: [
    { path: 'config.json', content: Buffer.from('{"architectures":["LlamaForCausalLM"]}'), lfs: false },
    { path: 'model.safetensors', content: Buffer.alloc(20_000, 7) },
    { path: 'tokenizer.model', content: Buffer.alloc(1000, 1) },
    { path: 'notes.txt', content: Buffer.from('not needed'), lfs: false },
  ] })
  fake.addRepo('acme/gated', { gated: true, files: [{ path: 'g-Q4_K_M.gguf', content: q4 }] })
  fake.addRepo('acme/private', { private: true, files: [{ path: 'p-Q4_K_M.gguf', content: q4 }] })
  fake.addRepo('acme/nothing', { files: [{ path: 'README.md', content: Buffer.from('hi'), lfs: false }] })
  return fake
}

async function pull (url: string, model: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<{ status: number, events: any[] }> {
  const res = await fetch(`${url}/api/pull`, { method: 'POST', headers: { accept: 'application/x-ndjson' }, body: JSON.stringify({ model, ...extra }), signal })
  const text = await res.text()
  return { status: res.status, events: text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) }
}

async function serve (t: Test, fake: FakeHub, values: Record<string, unknown> = {}) {
  const app = await build(t, { hub: { endpoint: fake.url, token: null }, ...values })
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }) }
}

t.test('a GGUF pull: the exact event sequence, a verified file, a listed model', async (t) => {
  const fake = await hub(t)
  fake.faults = { pageSize: 2 }
  const { app, url } = await serve(t, fake)
  const { status, events } = await pull(url, 'acme/tiny-GGUF')
  t.equal(status, 200)
  t.ok(fake.hubRequests.some((r) => r.includes('cursor=')), 'the tree was read page by page')
  t.same(events[0], { status: 'pulling acme/tiny-GGUF' })
  const downloads = events.slice(1, -1)
  t.ok(downloads.length >= 2)
  const size = fake.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q4_K_M.gguf')!.content.length
  for (const e of downloads) t.same(Object.keys(e).sort(), ['completed', 'digest', 'status', 'total'])
  t.same(downloads[0], { status: 'downloading tiny-Q4_K_M.gguf', digest: 'tiny-Q4_K_M.gguf', total: size, completed: 0 })
  t.same(downloads.at(-1), { status: 'downloading tiny-Q4_K_M.gguf', digest: 'tiny-Q4_K_M.gguf', total: size, completed: size })
  t.same(events.at(-1), { status: 'success' })
  const record = app.store.get('acme/tiny-GGUF')
  t.equal(record.format, 'gguf')
  t.equal(record.manifest.source.commit, fake.repos.get('acme/tiny-GGUF')!.commit)
  const file = join(record.dir, 'tiny-Q4_K_M.gguf')
  t.equal(sha256(await readFile(file)), record.manifest.files[0]!.sha256)
  t.same((await readdir(record.dir)).sort(), ['manifest.json', 'tiny-Q4_K_M.gguf'], 'no partial or other quant left')
  const tags = (await (await fetch(`${url}/api/tags`)).json()) as { models: Array<{ name: string }> }
  t.same(tags.models.map((m) => m.name), ['acme/tiny-GGUF'])
  const again = await pull(url, 'acme/tiny-GGUF', { stream: false })
  t.same(again.events, [{ status: 'success' }], 'stream: false answers once')
  t.equal(fake.cdnBytes.get(shaOf(fake, 'acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')), size, 'pulling a whole model again downloads nothing')
})

t.test('pulls of a tag, a split model and a SafeTensors model', async (t) => {
  const fake = await hub(t)
  const { app, url } = await serve(t, fake)
  t.same((await pull(url, 'acme/tiny-GGUF:q8_0')).events.at(-1), { status: 'success' })
  t.equal(app.store.get('acme/tiny-GGUF').manifest.primary, 'tiny-Q8_0.gguf')
  const split = await pull(url, 'acme/split-GGUF')
  t.same(split.events.at(-1), { status: 'success' })
  t.same([...new Set(split.events.filter((e) => e.digest).map((e) => e.digest))], ['big-Q4_K_M-00001-of-00003.gguf', 'big-Q4_K_M-00002-of-00003.gguf', 'big-Q4_K_M-00003-of-00003.gguf'])
  t.equal(app.store.get('acme/split-GGUF').manifest.files.length, 3)
  // Small files come through the hub's relative redirect to its resolve cache, as on the real hub.
  fake.faults = { resolveCache: true }
  const st = await pull(url, 'acme/tiny-st')
  t.same([...new Set(st.events.filter((e) => e.digest).map((e) => e.digest))].sort(), ['config.json', 'model.safetensors', 'tokenizer.model'])
  t.ok(fake.hubRequests.some((r) => r.startsWith('/api/resolve-cache/models/acme/tiny-st/')), 'config.json came through the resolve cache')
  // These weights are not a real checkpoint: the download is whole and listed, and the stream ends with the
  // converter's reason for not converting it (test/plugins/convert covers conversion itself).
  t.match(st.events.at(-1).error, /cannot convert|conversion is not available/)
  const record = app.store.get('acme/tiny-st')
  t.equal(record.format, 'safetensors')
  t.equal(record.manifest.primary, null)
  t.same(record.manifest.files.map((f) => f.name).sort(), ['config.json', 'model.safetensors', 'tokenizer.model'])
  const none = await pull(url, 'acme/nothing')
  t.match(none.events.at(-1).error, /holds neither a GGUF file nor SafeTensors/)
})

t.test('a dropped connection is resumed with Range to a verified file', async (t) => {
  const fake = await hub(t)
  fake.faults = { dropAfterBytes: 100_000, drops: 2 }
  const { app, url } = await serve(t, fake)
  const { events } = await pull(url, 'acme/tiny-GGUF')
  t.same(events.at(-1), { status: 'success' })
  const offsets = fake.cdnRanges.map((r) => Number(/^bytes=(\d+)-$/.exec(r)![1]))
  t.equal(offsets.length, 2, 'two resumes')
  t.ok(offsets[0]! > 0 && offsets[1]! > offsets[0]!, `each resume asked for the rest only (${fake.cdnRanges.join(', ')})`)
  const record = app.store.get('acme/tiny-GGUF')
  t.equal(sha256(await readFile(join(record.dir, 'tiny-Q4_K_M.gguf'))), record.manifest.files[0]!.sha256)
})

t.test('a server ignoring Range: the download starts over and still verifies', async (t) => {
  const fake = await hub(t)
  fake.faults = { dropAfterBytes: 50_000, drops: 1, ignoreRange: true }
  const { url } = await serve(t, fake)
  t.same((await pull(url, 'acme/tiny-GGUF')).events.at(-1), { status: 'success' })
})

t.test('a restart in the middle of a pull: the next pull finishes from the partial data', async (t) => {
  const fake = await hub(t)
  const size = fake.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q4_K_M.gguf')!.content.length
  fake.faults = { stallAfterBytes: 200_000 }
  const config = await testConfig(t, { hub: { endpoint: fake.url } })
  const first = await buildTestApp(config)
  const firstUrl = await first.listen({ host: '127.0.0.1', port: 0 })
  const controller = new AbortController()
  const stalled = pull(firstUrl, 'acme/tiny-GGUF', {}, controller.signal).catch(() => null)
  const partial = join(config.modelsDir, 'acme', 'tiny-GGUF', 'tiny-Q4_K_M.gguf.partial')
  await until('the first server to write the 200,000 bytes it gets', async () => existsSync(partial) && (await stat(partial)).size >= 200_000)
  t.equal((await stat(partial)).size, 200_000, 'the first server wrote what it got')
  controller.abort()
  await stalled
  await first.close() // the "restart"
  fake.faults = {}
  fake.cdnBytes.clear()
  const second = await buildTestApp(config)
  t.teardown(() => second.close())
  t.equal(second.store.find('acme/tiny-GGUF'), null, 'nothing half-pulled is listed')
  const { events } = await pull(await second.listen({ host: '127.0.0.1', port: 0 }), 'acme/tiny-GGUF')
  t.same(events.at(-1), { status: 'success' })
  t.equal(events[1].completed, 200_000, 'progress starts from the partial data')
  t.equal(fake.cdnBytes.get(shaOf(fake, 'acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')), size - 200_000, `fetched ${size - 200_000} bytes the second time, less than the ${size} of the file`)
})

t.test('a file that does not match its SHA-256 is refused and nothing is listed', async (t) => {
  const fake = await hub(t)
  fake.faults = { corrupt: new Set([shaOf(fake, 'acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')]) }
  const { app, url } = await serve(t, fake)
  const { status, events } = await pull(url, 'acme/tiny-GGUF')
  t.equal(status, 200)
  t.match(events.at(-1).error, /tiny-Q4_K_M\.gguf does not match its SHA-256.*discarded, pull again/)
  t.equal(app.store.find('acme/tiny-GGUF'), null)
  t.same(await readdir(join(app.config.modelsDir, 'acme', 'tiny-GGUF')), [], 'no partial file kept')
  const whole = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny-GGUF', stream: false }) })
  t.equal(whole.status, 502, 'stream: false answers the error with its status')
})

t.test('a hub that sends more than it lists: stopped at the listed size, nothing kept', async (t) => {
  const fake = await hub(t)
  fake.faults = { oversendBytes: 50 * 1024 * 1024 }
  const { app, url } = await serve(t, fake)
  const { status, events } = await pull(url, 'acme/tiny-GGUF')
  t.equal(status, 200)
  t.match(events.at(-1).error, /tiny-Q4_K_M\.gguf came with more than the \d+ bytes the hub lists; the download was discarded/)
  t.equal(app.store.find('acme/tiny-GGUF'), null)
  t.same(await readdir(join(app.config.modelsDir, 'acme', 'tiny-GGUF')), [], 'no partial file or sidecar kept')
})

t.test('429 with RateLimit is waited out', async (t) => {
  const fake = await hub(t)
  fake.faults = { rateLimited: 1 }
  const { url } = await serve(t, fake)
  const started = Date.now()
  t.same((await pull(url, 'acme/tiny-GGUF')).events.at(-1), { status: 'success' })
  t.ok(Date.now() - started >= 1900, 'it waited the reset time the hub gave (t=1, +1 s)')
})

t.test('gated, private and missing repositories say what to do; the token never reaches the CDN', async (t) => {
  const fake = await hub(t)
  fake.faults = { rejectAuthOnCdn: true }
  const anonymous = await serve(t, fake)
  t.match((await pull(anonymous.url, 'acme/gated')).events.at(-1).error, /acme\/gated is a gated repository: accept its licence at http:\/\/127\.0\.0\.1:\d+\/acme\/gated and set HF_TOKEN/)
  t.match((await pull(anonymous.url, 'acme/private')).events.at(-1).error, /repository acme\/private was not found on .* \(if it is private, set HF_TOKEN\)/)
  t.match((await pull(anonymous.url, 'acme/missing')).events.at(-1).error, /repository acme\/missing was not found/)
  const missing = await fetch(`${anonymous.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'acme/missing', stream: false }) })
  t.equal(missing.status, 404)
  fake.tokens.add('hf_secret')
  const { url } = await serve(t, fake, { hub: { endpoint: fake.url, token: 'hf_secret' } })
  t.same((await pull(url, 'acme/gated')).events.at(-1), { status: 'success' })
  t.same((await pull(url, 'acme/private')).events.at(-1), { status: 'success' })
  t.same(fake.cdnAuthorizations, [], 'the CDN never saw the token')
})

t.test('two pulls of one model share one download; a client leaving cancels it; delete during a pull is 409', async (t) => {
  const fake = await hub(t)
  const size = fake.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q4_K_M.gguf')!.content.length
  const { app, url } = await serve(t, fake)
  const [a, b] = await Promise.all([pull(url, 'acme/tiny-GGUF'), pull(url, 'acme/tiny-GGUF')])
  t.same(a.events.at(-1), { status: 'success' })
  t.same(b.events.at(-1), { status: 'success' })
  t.equal(fake.cdnBytes.get(shaOf(fake, 'acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')), size, 'the file was fetched once')

  fake.faults = { stallAfterBytes: 100_000 }
  const controller = new AbortController()
  const leaving = pull(url, 'acme/small-GGUF', {}, controller.signal).catch(() => null)
  // Once the pull holds the model's write lock, a delete is a conflict.
  await until('the pull to hold the model', () => app.puller.isPulling('acme/small-GGUF') && app.store.isBusy('acme/small-GGUF'))
  const del = await fetch(`${url}/api/delete`, { method: 'DELETE', body: JSON.stringify({ model: 'acme/small-GGUF' }) })
  t.equal(del.status, 409, 'delete while pulling')
  controller.abort()
  await leaving
  await until('the download to stop once its only client left', () => !app.puller.isPulling('acme/small-GGUF'))
  t.pass('the download stopped when its only client left')
})

t.test('a tree that lists ../../x is refused', async (t) => {
  const fake = await hub(t)
  fake.faults = { extraTreeEntries: [{ type: 'file', path: '../../x', size: 1, oid: 'a'.repeat(40) }] }
  const { app, url } = await serve(t, fake)
  t.match((await pull(url, 'acme/tiny-GGUF')).events.at(-1).error, /unsafe file path "\.\.\/\.\.\/x"/)
  t.notOk(existsSync(join(app.config.modelsDir, 'x')))
  const bad = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: '../evil' }) })
  t.equal(bad.status, 400)
})

t.test('a pull that cannot fit on the disk is refused before any download', async (t) => {
  const fake = await hub(t)
  fake.faults = { extraTreeEntries: [{ type: 'file', path: 'huge-Q4_K_M.gguf', size: 2 ** 60, oid: 'b'.repeat(40) }] }
  const { app, url } = await serve(t, fake)
  const { events } = await pull(url, 'acme/nothing')
  t.match(events.at(-1).error, /^not enough disk space for acme\/nothing: it needs 1048576 TiB, \d[\d.]* (bytes|KiB|MiB|GiB|TiB) are free in /, 'sizes in units that tell them apart')
  t.notOk(events.some((e) => e.digest), 'no download started')
  t.equal(fake.cdnBytes.size, 0)
  const whole = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'acme/nothing', stream: false }) })
  t.equal(whole.status, 507)
  t.equal(app.store.find('acme/nothing'), null)
})

t.test('pulls of different models run side by side', async (t) => {
  const fake = await hub(t)
  // The split model's CDN stalls; the tag pull of another model must finish meanwhile.
  fake.faults = { stallAfterBytes: 1000, stallShas: new Set([shaOf(fake, 'acme/split-GGUF', 'big-Q4_K_M-00001-of-00003.gguf')]) }
  const { app, url } = await serve(t, fake)
  const controller = new AbortController()
  const stalled = pull(url, 'acme/split-GGUF', {}, controller.signal).catch(() => null)
  await until('the split model\'s pull to start', () => app.puller.isPulling('acme/split-GGUF'))
  const other = await pull(url, 'acme/small-GGUF')
  t.same(other.events.at(-1), { status: 'success' })
  t.ok(app.puller.isPulling('acme/split-GGUF'), 'the first pull was still running when the second finished')
  controller.abort()
  await stalled
})

t.test('a pull right after its only client left starts afresh; another tag of a model being pulled is a clear 409', async (t) => {
  const fake = await hub(t)
  const size = fake.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q4_K_M.gguf')!.content.length
  fake.faults = { stallAfterBytes: 100_000 }
  const { app, url } = await serve(t, fake)
  const controller = new AbortController()
  const leaving = pull(url, 'acme/tiny-GGUF', {}, controller.signal).catch(() => null)
  const partial = join(app.config.modelsDir, 'acme', 'tiny-GGUF', 'tiny-Q4_K_M.gguf.partial')
  await until('the first 100,000 bytes to be written', async () => existsSync(partial) && (await stat(partial)).size >= 100_000)
  const other = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny-GGUF:Q8_0', stream: false }) })
  t.equal(other.status, 409)
  t.match(((await other.json()) as { error: string }).error, /^acme\/tiny-GGUF is being pulled with the default tag; pull again when that has finished$/)
  fake.faults = {}
  controller.abort()
  await leaving
  const again = await pull(url, 'acme/tiny-GGUF')
  t.same(again.events.at(-1), { status: 'success' }, 'the new pull did not join the cancelled one')
  t.equal(again.events[1].completed, 100_000, 'and it went on from the partial data')
  t.equal(fake.cdnBytes.get(shaOf(fake, 'acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')), size, 'no byte fetched twice')
})

t.test('the official ollama client pulls, lists and deletes (it sends `name`, not `model`, for pull and delete)', async (t) => {
  const fake = await hub(t)
  const { app, url } = await serve(t, fake)
  const ollama = new Ollama({ host: url })
  const statuses: string[] = []
  for await (const part of await ollama.pull({ model: 'acme/small-GGUF', stream: true })) statuses.push(part.status)
  t.equal(statuses.at(-1), 'success')
  t.ok(app.store.find('acme/small-GGUF'), 'pulled and listed')
  t.equal((await ollama.pull({ model: 'acme/small-GGUF' })).status, 'success', 'unstreamed too (already there)')
  t.ok((await ollama.list()).models.some((m) => m.name === 'acme/small-GGUF'))
  await ollama.delete({ model: 'acme/small-GGUF' })
  t.notOk(app.store.find('acme/small-GGUF'), 'deleted')
  const missing = await ollama.delete({ model: 'acme/small-GGUF' }).catch((e: unknown) => e)
  t.match(missing, { status_code: 404, error: /not found/ })
  const neither = await fetch(`${url}/api/delete`, { method: 'DELETE', body: JSON.stringify({}) })
  t.equal(neither.status, 400, 'a body naming no model is still refused')
  t.match(await neither.json(), { error: /model|name/ })
})

t.test('a repository with a vision projector: it is pulled, verified and resumed with the model, recorded, and deleted with it', async (t) => {
  const fake = await hub(t)
  const projectorSha = shaOf(fake, 'acme/vision-GGUF', 'mmproj-vision-F16.gguf')
  const projectorSize = fake.repos.get('acme/vision-GGUF')!.files.find((f) => f.path === 'mmproj-vision-F16.gguf')!.content.length
  fake.faults = { stallAfterBytes: 20_000, stallShas: new Set([projectorSha]) }
  const { app, url } = await serve(t, fake)
  const controller = new AbortController()
  const stalled = pull(url, 'acme/vision-GGUF', {}, controller.signal).catch(() => null)
  const partial = join(app.config.modelsDir, 'acme', 'vision-GGUF', 'mmproj-vision-F16.gguf.partial')
  await until('the projector\'s first 20,000 bytes to be written', async () => existsSync(partial) && (await stat(partial)).size >= 20_000)
  t.equal((await stat(partial)).size, 20_000, 'the projector was cut short mid-download')
  controller.abort()
  await stalled
  t.equal(app.store.find('acme/vision-GGUF'), null, 'a model whose projector is not whole is not listed')

  fake.faults = {}
  const { events } = await pull(url, 'acme/vision-GGUF')
  t.same(events.at(-1), { status: 'success' })
  t.same([...new Set(events.filter((e) => e.digest).map((e) => e.digest))], ['vision-Q4_K_M.gguf', 'mmproj-vision-F16.gguf'], 'the model, then its projector (F16: none matches Q4_K_M)')
  t.equal(events.find((e) => e.digest === 'mmproj-vision-F16.gguf').completed, 20_000, 'the projector resumed from its partial data')
  t.equal(fake.cdnBytes.get(projectorSha), projectorSize, `its bytes crossed the wire once in all (${projectorSize})`)
  const record = app.store.get('acme/vision-GGUF')
  t.equal(record.manifest.projector, 'mmproj-vision-F16.gguf')
  t.equal(record.projector, 'mmproj-vision-F16.gguf')
  const projectorFile = record.manifest.files.find((f) => f.name === 'mmproj-vision-F16.gguf')!
  t.equal(sha256(await readFile(join(record.dir, projectorFile.name))), projectorFile.sha256, 'verified like the weights')
  t.same((await readdir(record.dir)).sort(), ['manifest.json', 'mmproj-vision-F16.gguf', 'vision-Q4_K_M.gguf'], 'no partial or other projector left')
  const show = await (await fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'acme/vision-GGUF' }) })).json() as any
  t.ok(show.capabilities.includes('vision'), '/api/show says vision')
  t.equal(show.projector_info['general.architecture'], 'clip')

  t.same((await pull(url, 'acme/vision-GGUF:Q8_0')).events.at(-1), { status: 'success' })
  t.equal(app.store.get('acme/vision-GGUF').projector, 'mmproj-vision-Q8_0.gguf', 'another quant: the projector of that quant, the old one gone')
  t.same((await readdir(record.dir)).sort(), ['manifest.json', 'mmproj-vision-Q8_0.gguf', 'vision-Q8_0.gguf'])

  await fetch(`${url}/api/delete`, { method: 'DELETE', body: JSON.stringify({ model: 'acme/vision-GGUF' }) })
  t.notOk(existsSync(record.dir), 'deleting the model removes its projector with it')
})

t.test('a projector that does not match its SHA-256, or is no projector, fails the pull and nothing is listed', async (t) => {
  const fake = await hub(t)
  fake.faults = { corrupt: new Set([shaOf(fake, 'acme/vision-GGUF', 'mmproj-vision-F16.gguf')]) }
  const { app, url } = await serve(t, fake)
  const corrupt = await pull(url, 'acme/vision-GGUF')
  t.match(corrupt.events.at(-1).error, /mmproj-vision-F16\.gguf does not match its SHA-256/)
  t.equal(app.store.find('acme/vision-GGUF'), null)
  const bad = await pull(url, 'acme/badproj-GGUF')
  t.match(bad.events.at(-1).error, /mmproj-b-F16\.gguf is not a projector \(its architecture is llama, not clip\)/)
  t.equal(app.store.find('acme/badproj-GGUF'), null)
})
