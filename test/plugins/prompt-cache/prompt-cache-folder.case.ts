// The prompt-cache folder trusts nothing it reads (plugins/prompt-cache/prompt-cache-folder.ts): whoever can write into
// the models folder plants sidecars naming paths outside it, saves lying about their size, links named like saves,
// files of their own. Each gets a bounded outcome: nothing outside the folder is read or deleted, sizes are the
// file system's, what the gateway did not write is left alone and reported by `llamagate doctor`.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { copyFile, lstat, mkdir, readdir, readFile, stat, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { Config } from '../../../core/platform/config.js'
import { manifest } from '../../../plugins/prompt-cache/plugin-manifest.js'
import { PromptCaches } from '../../../plugins/prompt-cache/prompt-caches.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { post, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'

const WORDS = 'a planted file in the cache folder must never reach outside it nor count for less than it weighs'.split(' ')
const prompt = (seed: number): string => Array.from({ length: 120 }, (_, i) => WORDS[(i * 5 + seed * 11) % WORDS.length]).join(' ')
const KEY = '0123456789abcdef'

/** A sidecar as the gateway writes it, with `claims` on top. */
function sidecar (key: string, id: string, claims: Record<string, unknown> = {}): string {
  return JSON.stringify({ id, key, model: 'acme/tiny', tokens: 100, bytes: 1000, savedAt: Date.now(), lastUsed: Date.now(), ...claims })
}

/** Files outside the folder, where a traversal would land: `<dataDir>/victim.json` and `.bin`. */
async function victims (config: Config): Promise<() => Promise<string[]>> {
  const files = ['victim.json', 'victim.bin'].map((name) => join(config.dataDir, name))
  for (const file of files) await writeFile(file, 'not the gateway\'s')
  return async () => Promise.all(files.map((file) => readFile(file, 'utf8').catch(() => 'deleted')))
}

const exists = (file: string): Promise<boolean> => lstat(file).then(() => true, () => false)
const cacheDir = (config: Config): string => join(config.modelsDir, '.prompt-cache')

async function turn (server: InferenceServer, model: string, content: string): Promise<number> {
  const res = await post(`${server.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content }], max_tokens: 2, temperature: 0 })
  await res.arrayBuffer()
  return res.status
}

t.test('a planted sidecar naming paths outside the folder deletes nothing outside it: not at the scan, a save or a budget sweep', async (t) => {
  // One save of these prompts is 250-300 KB for the tiny model: every save sweeps the budget.
  const server = await serveTinyModels(t, ['acme/tiny'], { prompt_cache: { min_tokens: 32, size: '400KiB' } })
  const { config } = server.app
  const intact = await victims(config)
  const dir = cacheDir(config)
  await mkdir(dir, { recursive: true })
  // The attack as found: a name of its own, an id climbing out, a claimed size past any budget, used long ago.
  const traversal = { id: '/../../../victim', key: 'x', bytes: 1e12, lastUsed: 0 }
  await writeFile(join(dir, 'evil.json'), JSON.stringify({ ...traversal, model: 'acme/tiny', tokens: 1, savedAt: 0 }))
  await writeFile(join(dir, 'evil.bin'), 'x')
  // The same under the gateway's own names: the name says one thing, the sidecar another.
  const [a, b] = [randomUUID(), randomUUID()]
  await writeFile(join(dir, `${KEY}-${a}.json`), sidecar(KEY, '/../../../victim', { bytes: 1e12 }))
  await writeFile(join(dir, `${KEY}-${a}.bin`), 'x')
  await writeFile(join(dir, `${KEY}-${b}.json`), sidecar('../../victim', b, { bytes: 1e12 }))
  await writeFile(join(dir, `${KEY}-${b}.bin`), 'x')

  t.equal(await turn(server, 'acme/tiny', prompt(1)), 200, 'the first load scans the folder')
  await post(`${server.url}/api/stop`, { model: 'acme/tiny' })
  t.equal(await turn(server, 'acme/tiny', prompt(2)), 200)
  await server.app.close() // a second save, a second sweep
  t.same(await intact(), ['not the gateway\'s', 'not the gateway\'s'], 'both victims outside the folder are whole')
  const left = await readdir(dir)
  t.ok(left.includes('evil.json') && left.includes('evil.bin'), 'the files of a name the gateway does not write are left alone')
  t.notOk(left.some((f) => f.includes(a) || f.includes(b)), 'the gateway\'s names whose sidecar disagrees are deleted, inside the folder')
  t.equal(left.filter((f) => /^[0-9a-f]{16}-.*\.bin$/.test(f)).length, 1, 'the model\'s own save is kept (one fits the budget)')
})

t.test('saves found on disk count by their size on disk, whatever their sidecar claims', async (t) => {
  const dir = join(await tempDir(t), '.prompt-cache')
  await mkdir(dir)
  const [big, older] = [randomUUID(), randomUUID()]
  // Sparse files: 50 MB and 20 MB to stat, nothing to write.
  await writeFile(join(dir, `${KEY}-${big}.json`), sidecar(KEY, big, { bytes: 0 }))
  await writeFile(join(dir, `${KEY}-${big}.bin`), '')
  await truncate(join(dir, `${KEY}-${big}.bin`), 50e6)
  await writeFile(join(dir, `${KEY}-${older}.json`), sidecar(KEY, older, { bytes: 0, lastUsed: Date.now() - 60_000 }))
  await writeFile(join(dir, `${KEY}-${older}.bin`), '')
  await truncate(join(dir, `${KEY}-${older}.bin`), 20e6)

  const caches = new PromptCaches({ dir, sizeBytes: 60e6, minTokens: 1 })
  t.equal(await caches.init(), true)
  t.same(caches.list().map((e) => [e.id, e.bytes]), [[big, 50e6]], 'the 50 MB save claiming 0 bytes counts as 50 MB')
  t.same((await readdir(dir)).sort(), [`${KEY}-${big}.bin`, `${KEY}-${big}.json`], 'the older one, past the 60 MB budget with it, is gone')
})

t.test('a link named like a save is neither followed nor deleted through; the restore hands llama-server only real files', async (t) => {
  const server = await serveTinyModels(t, ['acme/tiny'], { prompt_cache: { min_tokens: 32 } })
  const { config } = server.app
  const dir = cacheDir(config)
  t.equal(await turn(server, 'acme/tiny', prompt(3)), 200)
  await server.app.close()
  const [real] = (await readdir(dir)).filter((f) => f.endsWith('.bin'))
  const key = real!.slice(0, 16)
  // Outside the folder: a good state file and a good sidecar, the most tempting targets.
  const outside = join(config.dataDir, 'outside')
  await mkdir(outside)
  await copyFile(join(dir, real!), join(outside, 'state.bin'))
  const [linked, linkedSidecar] = [randomUUID(), randomUUID()]
  await writeFile(join(outside, 'sidecar.json'), sidecar(key, linkedSidecar))
  await symlink(join(outside, 'state.bin'), join(dir, `${key}-${linked}.bin`))
  await writeFile(join(dir, `${key}-${linked}.json`), sidecar(key, linked, { lastUsed: Date.now() + 1e9 }))
  await symlink(join(outside, 'sidecar.json'), join(dir, `${key}-${linkedSidecar}.json`))
  await copyFile(join(dir, real!), join(dir, `${key}-${linkedSidecar}.bin`))
  const before = await stat(join(outside, 'state.bin'))

  // A new gateway on the same folder: its scan meets the links. Two slots, three candidates: only the real one goes in.
  const runtime = await cpuRuntime()
  const app = await buildTestApp(await testConfig(t, { data_dir: config.dataDir, runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, prompt_cache: { min_tokens: 32, size: '400KiB' }, default_options: { num_ctx: 512, num_parallel: 2 } }))
  t.teardown(() => app.close())
  const restored: number[] = []
  app.promptCache!.events.on('restored', (_model, tokens) => restored.push(tokens))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.equal(await turn({ app, url }, 'acme/tiny', prompt(3)), 200)
  t.equal(restored.length, 1, 'the real save restored; the link was not handed to llama-server')
  await app.close() // a save and a sweep past a budget of one save
  t.ok((await lstat(join(dir, `${key}-${linked}.bin`))).isSymbolicLink(), 'the link to a state file is left as it was')
  t.ok((await lstat(join(dir, `${key}-${linkedSidecar}.json`))).isSymbolicLink(), 'the link to a sidecar is left as it was')
  t.notOk(await exists(join(dir, `${key}-${linked}.json`)), 'the sidecar whose .bin is a link is deleted: no save of the gateway\'s')
  t.same((await stat(join(outside, 'state.bin'))).mtimeMs, before.mtimeMs, 'the state file outside is untouched')
  t.equal(JSON.parse(await readFile(join(outside, 'sidecar.json'), 'utf8')).id, linkedSidecar, 'the sidecar outside is untouched')
})

t.test('what the gateway did not write is left alone, not counted, and reported by doctor', async (t) => {
  const config = await testConfig(t, { prompt_cache: { size: '1GiB' } })
  const doctor = async (): Promise<{ status: string, message: string }> => (await manifest.doctor!({ config, shared: new Map() })).checks[0]!
  t.match(await doctor(), { status: 'ok', message: /not made yet/ }, 'no folder yet: fine')
  const dir = cacheDir(config)
  await mkdir(join(dir, 'photos'), { recursive: true })
  await writeFile(join(dir, 'photos', 'cat.jpg'), 'meow')
  await writeFile(join(dir, 'notes.txt'), 'mine')
  await writeFile(join(dir, 'tmp-notes.bin'), 'mine too')
  execFileSync('mkfifo', [join(dir, `${KEY}-${randomUUID()}.bin`)])
  await symlink('/etc/passwd', join(dir, `${KEY}-${randomUUID()}.json`))
  const ours = randomUUID()
  await writeFile(join(dir, `${KEY}-${ours}.json`), sidecar(KEY, ours))
  await writeFile(join(dir, `${KEY}-${ours}.bin`), Buffer.alloc(4096))
  const damaged = randomUUID()
  await writeFile(join(dir, `${KEY}-${damaged}.json`), '{"id":')
  const planted = (await readdir(dir)).filter((f) => !f.includes(ours) && !f.includes(damaged)).sort()

  const report = await doctor()
  t.equal(report.status, 'warn')
  t.match(report.message, `${dir}: 1 save, 4.00 KiB of 1.00 GiB`, 'the save counted by its size')
  t.match(report.message, '5 files (', 'the five planted names counted')
  for (const name of planted) t.match(report.message, JSON.stringify(name), `${name} listed`)
  t.match(report.message, `1 file ("${KEY}-${damaged}.json") damaged, deleted at the next start`)

  const caches = new PromptCaches({ dir, sizeBytes: 1 << 30, minTokens: 1 })
  t.equal(await caches.init(), true)
  t.same(caches.list().map((e) => e.id), [ours], 'only the gateway\'s save is kept')
  t.same((await readdir(dir)).filter((f) => !f.includes(ours)).sort(), planted, 'the planted files are all there; the damaged sidecar is gone')
  t.equal(await readFile(join(dir, 'photos', 'cat.jpg'), 'utf8'), 'meow')
  t.match(await doctor(), { status: 'warn', message: /5 files .* the gateway did not write, left alone and not counted/ })
})

t.test('a file in the folder\'s place: the model answers without saves, and doctor says why', async (t) => {
  const server = await serveTinyModels(t, ['acme/tiny'], { prompt_cache: { min_tokens: 32 } })
  const { config } = server.app
  await writeFile(cacheDir(config), 'not a folder')
  const saved: string[] = []
  server.app.promptCache!.events.on('saved', (model) => saved.push(model))
  t.equal(await turn(server, 'acme/tiny', prompt(4)), 200, 'answered')
  await post(`${server.url}/api/stop`, { model: 'acme/tiny' })
  t.same(saved, [], 'nothing saved')
  t.equal(await readFile(cacheDir(config), 'utf8'), 'not a folder', 'the file is left as it was')
  t.match((await manifest.doctor!({ config, shared: new Map() })).checks[0], { status: 'warn', message: /cannot be used \(ENOTDIR\): runtimes run without saved prompt caches/ })
})
