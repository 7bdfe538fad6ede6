import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { downloadFile, type FileProgress } from '../../../plugins/download/download-file.js'
import { HubClient } from '../../../plugins/download/hub-client.js'
import { FakeHub, gitOid, sha256 } from '../../helpers/fake-hub.js'

const config = Buffer.from('{"architectures":["LlamaForCausalLM"],"hidden_size":64}')
const weights = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) & 0xff))

async function setup (t: Test) {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/st', { files: [{ path: 'config.json', content: config, lfs: false }, { path: 'model.safetensors', content: weights }] })
  const client = new HubClient({ endpoint: fake.url, token: null })
  const commit = fake.repos.get('acme/st')!.commit!
  // Not test/helpers/app.ts: this file needs no app, so it does not load every plugin.
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-download-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const progress: FileProgress[] = []
  const run = (file: { path: string, size: number, sha256: string | null, gitOid?: string | null }) =>
    downloadFile({ client, repo: 'acme/st', commit, file, dir, onProgress: (p) => progress.push(p) })
  return { fake, commit, dir, progress, run }
}

t.test('a small git file is checked by its git blob id', async (t) => {
  const { dir, run } = await setup(t)
  await run({ path: 'config.json', size: config.length, sha256: null, gitOid: gitOid(config) })
  t.same(await readFile(join(dir, 'config.json')), config)
  await t.rejects(run({ path: 'config.json', size: config.length, sha256: null, gitOid: '0'.repeat(40) }),
    { statusCode: 502, message: /config\.json does not match its git blob id/ })
  t.same((await readdir(dir)).sort(), ['config.json'], 'the refused download left no partial file behind')
})

t.test('a partial small file from another commit is not resumed', async (t) => {
  const { dir, run } = await setup(t)
  await writeFile(join(dir, 'config.json.partial'), Buffer.from('{"architectures":["Other"'))
  await writeFile(join(dir, 'config.json.partial.json'), JSON.stringify({ url: 'x', repository: 'acme/st', commit: 'f'.repeat(40), path: 'config.json', size: config.length, sha256: null }))
  await run({ path: 'config.json', size: config.length, sha256: null, gitOid: gitOid(config) })
  t.same(await readFile(join(dir, 'config.json')), config)
  t.notOk(existsSync(join(dir, 'config.json.partial.json')), 'the sidecar is gone once the file is whole')
})

t.test('the sidecar says what the partial bytes are for; progress runs from the partial bytes to the size', async (t) => {
  const { fake, commit, dir, progress, run } = await setup(t)
  const file = { path: 'model.safetensors', size: weights.length, sha256: sha256(weights) }
  fake.faults = { stallAfterBytes: 120_000 }
  const controller = new AbortController()
  const first = downloadFile({ client: new HubClient({ endpoint: fake.url, token: null }), repo: 'acme/st', commit, file, dir, signal: controller.signal,
    onProgress: (p) => { if (p.completed >= 120_000) controller.abort(new Error('test stops it')) } })
  await t.rejects(first, /test stops it/)
  t.same(JSON.parse(await readFile(join(dir, 'model.safetensors.partial.json'), 'utf8')),
    { url: `${fake.url}/acme/st/resolve/${commit}/model.safetensors`, repository: 'acme/st', commit, path: 'model.safetensors', size: weights.length, sha256: sha256(weights) })
  t.equal((await readFile(join(dir, 'model.safetensors.partial'))).length, 120_000, 'the partial bytes are kept')
  fake.faults = { dropAfterBytes: 80_000, drops: 1 }
  await run(file)
  t.same(await readFile(join(dir, 'model.safetensors')), weights)
  t.same(progress[0], { file: 'model.safetensors', total: weights.length, completed: 120_000 }, 'progress starts from the partial bytes')
  t.same(progress.at(-1), { file: 'model.safetensors', total: weights.length, completed: weights.length })
  t.ok(progress.every((p, i) => i === 0 || p.completed >= progress[i - 1]!.completed), 'progress never goes back')
  t.same(fake.cdnRanges, ['bytes=120000-', 'bytes=200000-'], 'resumed from the partial file, then where the connection dropped')
  t.same((await readdir(dir)).sort(), ['model.safetensors'], 'no partial or sidecar left')
})
