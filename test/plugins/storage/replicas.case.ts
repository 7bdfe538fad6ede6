import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { FakeHub, sha256 } from '../../helpers/fake-hub.js'
import { once } from '../../helpers/once.js'
import { openPullStream, type PullStreamEvent } from '../../helpers/pull-stream.js'
import { runCli, startServe, type ServeProcess } from '../../helpers/serve-process.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'
import { until } from '../../helpers/until.js'

// Two gateway processes on one models folder (replicas on a shared volume): real `llamagate serve` processes,
// one fake hub on loopback, real sockets. What each replica's clients see, and what lands on the disk.

// Each test pulls a model of its own (its own bytes), so that the replicas can serve the whole file.
const MODELS = { together: 'acme/tiny-GGUF', takeover: 'acme/takeover-GGUF', left: 'acme/left-GGUF' }
const FILE = 'tiny-Q4_K_M.gguf'
const WRITER = fileURLToPath(new URL('./writer-process.ts', import.meta.url))

/** A `llamagate serve` of its own (its own home and port) on the shared models folder, pulling from the fake hub. */
async function replica (t: Test, models: string, fake: FakeHub, env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const home = await tempDir(t)
  const serve = await startServe(['--port', '0', '--models', models], { LLAMAGATE_HOME: home, HF_ENDPOINT: fake.url, ...env }, 60_000)
  t.teardown(() => { serve.child.kill('SIGKILL') })
  return serve
}

async function tags (serve: ServeProcess): Promise<Array<{ name: string, digest: string }>> {
  const res = await fetch(`${serve.address}/api/tags`)
  if (res.status !== 200) throw new Error(`/api/tags answered ${res.status}`)
  return ((await res.json()) as { models: Array<{ name: string, digest: string }> }).models
}

/**
 * The fake hub and two replicas on one models folder, started once for the file: each `llamagate serve` costs
 * seconds of CPU to start. The second logs at info: its access log says when a client left. A test that kills
 * the first replica is followed only by tests that start a first replica of their own.
 */
const shared = once(async () => {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  for (const [i, model] of Object.values(MODELS).entries()) {
    const content = await tinyGgufBytes(t, i + 1)
    fake.addRepo(model, { files: [{ path: 'README.md', content: Buffer.from('# tiny'), lfs: false }, { path: FILE, content }] })
  }
  const models = await tempDir(t)
  const a = await replica(t, models, fake)
  const b = await replica(t, models, fake, { LLAMAGATE_LOG_LEVEL: 'info' })
  return { fake, models, a, b }
})

/** The shared setup, with what a test needs to know of its own model. */
async function twoReplicas (model: string) {
  const { fake, models, a, b } = await shared()
  const content = fake.repos.get(model)!.files.find((f) => f.path === FILE)!.content
  return { fake, content, sha: sha256(content), models, dir: join(models, ...model.split('/')), a, b, model, waiting: `waiting for another process pulling ${model}` }
}

const lists = async (serve: ServeProcess, name: string): Promise<boolean> => (await tags(serve)).some((m) => m.name === name)

/** Whether every download event of a stream reports its file whole: nothing was fetched by this pull. */
const fetchedNothing = (events: PullStreamEvent[]): boolean => events.filter((e) => e.digest !== undefined).every((e) => e.completed === e.total)

t.test('two replicas pull one model at once: one download, one whole verified model, listed by both; a delete in one is seen by the other', async (t) => {
  const { fake, content, sha, models, dir, a, b, model, waiting } = await twoReplicas(MODELS.together)
  // A few seconds of download: the second pull finds the first one's lock and has to wait for it.
  fake.faults = { bytesPerSecond: Math.ceil(content.length / 2) }

  const [pullA, pullB] = await Promise.all([openPullStream(a.address, model), openPullStream(b.address, model)])
  const [eventsA, eventsB] = await Promise.all([pullA.done, pullB.done])
  t.equal(pullA.status, 200)
  t.equal(pullB.status, 200)
  t.same(eventsA.at(-1), { status: 'success' }, 'the first replica\'s pull succeeds')
  t.same(eventsB.at(-1), { status: 'success' }, 'the second replica\'s pull succeeds')
  t.same(eventsA[0], { status: `pulling ${model}` })
  t.same(eventsB[0], { status: `pulling ${model}` })
  const waited = [eventsA, eventsB].filter((events) => events.some((e) => e.status === waiting))
  t.equal(waited.length, 1, 'exactly one of the pulls said it was waiting for the other process')
  t.ok(waited[0] && fetchedNothing(waited[0]), 'and that one found the file whole: every progress event is complete')
  t.ok(waited[0]?.some((e) => e.digest === FILE && e.completed === content.length), 'it reported the file, whole')
  t.equal(fake.cdnBytes.get(sha), content.length, 'the file\'s bytes came from the hub once')

  t.same((await readdir(models)).sort(), ['.llamagate', 'acme'], 'one owner folder besides the store\'s own')
  t.same(await readdir(join(models, 'acme')), ['tiny-GGUF'], 'one model folder')
  t.same((await readdir(dir)).sort(), ['manifest.json', FILE], 'no partial file, no second copy')
  t.equal(sha256(await readFile(join(dir, FILE))), sha, 'the file on disk is the hub\'s, by its SHA-256')
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { files: Array<{ name: string, sha256: string, size: number }> }
  t.same(manifest.files, [{ name: FILE, size: content.length, sha256: sha }], 'the manifest records the verified file')
  t.same(await readdir(join(models, '.llamagate', 'locks')), [], 'no lock is left behind')

  // The last commit (the waiter's) is the one both replicas list: the other hears of it through the change feed.
  const digest = (await tags(b)).find((m) => m.name === model)?.digest
  t.ok(digest, 'the second replica lists the model')
  await until('both replicas to list the model with the same digest', async () => (await tags(a)).find((m) => m.name === model)?.digest === (await tags(b)).find((m) => m.name === model)?.digest, 10_000)
  t.pass('both list it, alike')

  const deleted = await fetch(`${a.address}/api/delete`, { method: 'DELETE', body: JSON.stringify({ model }) })
  t.equal(deleted.status, 200, 'deleted on the first replica')
  t.notOk(await lists(a, model), 'gone from the first replica at once')
  await until('the second replica to stop listing the deleted model', async () => !await lists(b, model), 10_000)
  t.notOk(existsSync(dir), 'its folder is gone')

  // A pull on one replica, and an import by the CLI (a third process), show up on the other.
  fake.faults = {}
  t.same((await (await openPullStream(a.address, model)).done).at(-1), { status: 'success' })
  await until('the second replica to list the model pulled by the first', () => lists(b, model), 10_000)
  const gguf = (await writeTinyGguf({ file: join(await tempDir(t), 'local.gguf'), seed: 2 })).file
  const imported = await runCli(['import', 'acme/local', gguf, '--models', models], { LLAMAGATE_HOME: await tempDir(t) })
  t.equal(imported.code, 0, imported.stderr)
  await until('both replicas to list the imported model', async () => await lists(a, 'acme/local') && await lists(b, 'acme/local'), 10_000)
  t.pass('a pull and an import are seen by the other replica')
})

t.test('the first puller is killed mid-download: the waiting replica takes over from its partial file and ends with a whole model', async (t) => {
  const { fake, content, sha, models, dir, a, b, model, waiting } = await twoReplicas(MODELS.takeover)
  const rangesBefore = fake.cdnRanges.length
  // Slow enough that the first pull is still downloading when it is killed.
  fake.faults = { bytesPerSecond: Math.ceil(content.length / 20) }
  const partial = join(dir, `${FILE}.partial`)

  const pullA = await openPullStream(a.address, model)
  // Its client sees the connection cut when it is killed.
  const endA = pullA.done.catch(() => null)
  await until('the first replica to have written part of the file', async () => existsSync(partial) && (await stat(partial)).size > 0)
  const pullB = await openPullStream(b.address, model)
  t.equal(pullB.status, 200)
  await until('the second replica to say it waits for the first', () => pullB.events.some((e) => e.status === waiting))
  t.notOk(pullB.events.some((e) => e.digest !== undefined), 'it downloads nothing while it waits')

  // Killed just after a refresh of its lock (every 5 s): staleness would let the lock go 10 s after it, not sooner.
  const lock = join(models, '.llamagate', 'locks', 'acme@takeover-gguf.lock')
  const before = (await stat(lock)).mtimeMs
  const refreshedAt = await until('the first replica to refresh its lock', async () => { const m = (await stat(lock)).mtimeMs; return m !== before ? m : null }, 15_000, 10)
  a.child.kill('SIGKILL')
  t.equal((await a.exited).signal, 'SIGKILL')
  await endA
  const killedAt = Date.now()
  const resumed = await until('the second replica to start downloading', () => pullB.events.find((e) => e.digest === FILE), 30_000)
  // A killed holder on this host is known from its owner record: taken over before its last refresh is 10 s old.
  t.ok(Date.now() < refreshedAt + 10_000, `taken over ${Date.now() - killedAt} ms after the kill, ${Math.round(Date.now() - refreshedAt)} ms after the lock's last refresh (stale after 10 s)`)
  t.ok(resumed.completed! > 0, `it resumed the killed replica's partial file (at ${resumed.completed} bytes)`)
  fake.faults = {}
  const eventsB = await pullB.done
  t.same(eventsB.at(-1), { status: 'success' }, 'the second replica\'s pull ends with success')

  t.same((await readdir(dir)).sort(), ['manifest.json', FILE], 'one whole file, no partial one')
  t.equal(sha256(await readFile(join(dir, FILE))), sha, 'verified: the hub\'s SHA-256')
  t.ok(await lists(b, model), 'listed by the surviving replica')
  const ranges = fake.cdnRanges.slice(rangesBefore)
  t.ok(ranges.length > 0, `the takeover asked the CDN for the rest only (${ranges.join(', ')})`)
  t.ok(fake.cdnBytes.get(sha)! < 2 * content.length, 'the file was not fetched twice over')
  t.same(await readdir(join(models, '.llamagate', 'locks')), [], 'no lock, no owner record left behind')
})

t.test('a client leaving while its pull waits for another replica: the wait is given up, nothing is held', async (t) => {
  // The second's access log says when it saw its client go.
  // The shared first replica may be gone (killed by the test before): this one starts its own.
  const { fake, sha, models, dir, b, model, waiting } = await twoReplicas(MODELS.left)
  const a = await replica(t, models, fake)
  const logBefore = b.output().length
  // The first replica's download stalls after a few bytes: its lock stays held for as long as the test wants.
  fake.faults = { stallAfterBytes: 1000 }

  const pullA = await openPullStream(a.address, model)
  const endA = pullA.done.catch(() => null)
  const partial = join(dir, `${FILE}.partial`)
  await until('the first replica to hold the model', async () => existsSync(partial) && (await stat(partial)).size > 0)
  const leaving = new AbortController()
  const pullB = await openPullStream(b.address, model, leaving.signal)
  await until('the second replica to wait', () => pullB.events.some((e) => e.status === waiting))
  leaving.abort()
  await pullB.done
  await until('the second replica to see its client go', () => /"path":"\/api\/pull".*"clientGone":true/.test(b.output().slice(logBefore)))
  const owner = JSON.parse(await readFile(join(models, '.llamagate', 'locks', 'acme@left-gguf.owner'), 'utf8')) as { pid: number }
  t.equal(owner.pid, a.child.pid, 'the lock is still the first replica\'s')

  // A wait that went on after its client left would hold the next pull back (it would wait for the abandoned job
  // to end, saying nothing). The next pull starts afresh and says at once that it waits.
  const next = await openPullStream(b.address, model)
  await until('a new pull on the second replica to say it waits', () => next.events.some((e) => e.status === waiting), 10_000)
  t.same(next.events[0], { status: `pulling ${model}` }, 'a fresh pull: its own first event')
  a.child.kill('SIGKILL')
  await a.exited
  await endA
  fake.faults = {}
  t.same((await next.done).at(-1), { status: 'success' }, 'it takes over once the first replica is gone')
  t.equal(sha256(await readFile(join(dir, FILE))), sha)
  t.same(await readdir(join(models, '.llamagate', 'locks')), [], 'no lock left behind')
})

t.test('the store\'s wait for another process\'s writer: said once, given up by a signal holding nothing, over at once when the holder dies', async (t) => {
  const models = await tempDir(t)
  const source = (await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf'), seed: 1 })).file
  const hold = async (): Promise<{ kill: () => Promise<void> }> => {
    const child = spawn(process.execPath, [...process.execArgv, WRITER, models, 'acme/held', 'hang', source], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    t.teardown(() => { child.kill('SIGKILL') })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    await until('the other process to hold the lock', () => out.includes('"holding"'), 60_000)
    return { kill: async () => { child.kill('SIGKILL'); await exited } }
  }
  // A staleness of 2 minutes (shipped: 10 s): a waiter that took the lock sooner knew its holder was dead.
  const store = new ModelStore(models, { lockStaleMs: 120_000 })
  await store.init()
  t.teardown(() => store.close())
  const holder = await hold()

  let told = 0
  const leaving = new AbortController()
  const waiting = store.openWriter('acme/held', { wait: true, waitMs: Infinity, signal: leaving.signal, onWait: () => { told++ } })
  await until('the wait to be said', () => told > 0)
  leaving.abort(new Error('the client left'))
  await t.rejects(waiting, { message: 'the client left' }, 'the wait ends with the signal\'s reason')
  t.equal(told, 1, 'the wait is said once')
  t.notOk(store.isBusy('acme/held'), 'nothing is marked busy')
  const owner = JSON.parse(await readFile(join(models, '.llamagate', 'locks', 'acme@held.owner'), 'utf8')) as { pid: number }
  t.not(owner.pid, process.pid, 'the lock is still the other process\'s')

  const waiter = store.openWriter('acme/held', { wait: true, waitMs: Infinity })
  await holder.kill()
  const killedAt = Date.now()
  const writer = await waiter
  // At once is a poll away (half a second at most); waiting out the staleness would take 120 s: half of it divides them.
  t.ok(Date.now() - killedAt < 60_000, `a waiter takes a killed holder's lock at once (${Date.now() - killedAt} ms; the staleness rule is 120 s)`)
  await writer.release()
})
