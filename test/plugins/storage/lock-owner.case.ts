import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { ConflictError } from '../../../core/base/errors.js'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'

const WRITER = fileURLToPath(new URL('./writer-process.ts', import.meta.url))

/** A second process that takes the writer's lock of `id`, writes half a file and holds on until killed. */
async function holdingWriter (t: Test, models: string, id: string): Promise<{ kill: () => Promise<void> }> {
  const source = (await writeTinyGguf({ file: join(await tempDir(t), 'm.gguf'), seed: 1 })).file
  const child = spawn(process.execPath, [...process.execArgv, WRITER, models, id, 'hang', source], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let out = ''
  let err = ''
  child.stderr.on('data', (d) => { err += d })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the writer did not take the lock within 60 s: ${err}`)), 60_000)
    child.stdout.on('data', (d) => { out += d; if (out.includes('"holding"')) { clearTimeout(timer); resolve() } })
    void exited.then(() => { clearTimeout(timer); reject(new Error(`the writer exited before holding the lock: ${err}`)) })
  })
  return { kill: async () => { child.kill('SIGKILL'); await exited } }
}

const STALE_MS = 120_000

async function store (t: Test, models: string): Promise<ModelStore> {
  // A staleness of 2 minutes (shipped: 10 s), far past each test's length: a takeover here is the owner record's
  // doing, never the lock's age, however slow the machine.
  const s = new ModelStore(models, { lockStaleMs: STALE_MS })
  await s.init()
  t.teardown(() => s.close())
  return s
}

t.test('a lock whose holder was killed on this host is taken over at once; a live holder\'s is not', async (t) => {
  const models = await tempDir(t)
  const writer = await holdingWriter(t, models, 'acme/held')
  const s = await store(t, models)
  await t.rejects(s.openWriter('acme/held'), ConflictError, 'a live holder keeps its lock')
  t.ok(existsSync(join(models, '.llamagate', 'locks', 'acme@held.owner')), 'the holder recorded itself beside the lock')
  await writer.kill()
  const started = Date.now()
  // Without a wait, openWriter fails at once on a held lock: taking it proves the dead holder was known at once.
  const w = await s.openWriter('acme/held')
  t.pass(`taken over without waiting for staleness (${Date.now() - started} ms, the staleness rule is ${STALE_MS / 1000} s)`)
  await w.release()
  t.notOk(existsSync(join(models, '.llamagate', 'locks', 'acme@held.owner')), 'released: the record is gone with the lock')
})

t.test('a holder\'s pid reused by another program counts as gone; a holder on another host keeps the staleness rule', async (t) => {
  const models = await tempDir(t)
  const locks = join(models, '.llamagate', 'locks')
  const s = await store(t, models)
  // A fresh lock (its mtime now) whose recorded holder has this test's pid but another start time: the holder is dead
  // and its pid went to another process.
  await mkdir(join(locks, 'acme@reused.lock'), { recursive: true })
  await writeFile(join(locks, 'acme@reused.owner'), JSON.stringify({ pid: process.pid, host: hostname(), started: '1' }))
  const reused = await s.openWriter('acme/reused')
  t.pass('taken over at once')
  await reused.release()

  await mkdir(join(locks, 'acme@remote.lock'), { recursive: true })
  await writeFile(join(locks, 'acme@remote.owner'), JSON.stringify({ pid: 999_999_999, host: `not-${hostname()}`, started: '1' }))
  await t.rejects(s.openWriter('acme/remote'), ConflictError, 'a fresh lock held from another host: its pid means nothing here')
})

t.test('a store opening the folder leaves another process\'s temporary manifest alone; a dead writer\'s goes', async (t) => {
  const models = await tempDir(t)
  const dir = join(models, 'acme', 'busy')
  await mkdir(dir, { recursive: true })
  // A live writer mid-rename (this test's own pid stands for it), and one whose process is gone.
  await writeFile(join(dir, `manifest.json.tmp-${process.pid}-1`), '{}')
  await writeFile(join(dir, 'manifest.json.tmp-2147483647-1'), '{}')
  await store(t, models)
  t.ok(existsSync(join(dir, `manifest.json.tmp-${process.pid}-1`)), 'the write under way keeps its file')
  t.notOk(existsSync(join(dir, 'manifest.json.tmp-2147483647-1')), 'the dead writer\'s is removed')
})

t.test('a dead holder\'s record about another lock directory is not taken for the holder of the lock there now', async (t) => {
  const models = await tempDir(t)
  const locks = join(models, '.llamagate', 'locks')
  const s = await store(t, models)
  // A fresh lock whose record is a dead process's, made for the directory before this one: a successor has just
  // taken the lock over and not yet recorded itself. Expiring it would let two writers in.
  await mkdir(join(locks, 'acme@successor.lock'), { recursive: true })
  await writeFile(join(locks, 'acme@successor.owner'), JSON.stringify({ pid: process.pid, host: hostname(), started: '1', lock: '1:1' }))
  await t.rejects(s.openWriter('acme/successor'), ConflictError, 'the successor keeps its lock')
  // The record a writer leaves names its own directory: once it is killed, that record is judged as before.
  const writer = await holdingWriter(t, models, 'acme/recorded')
  const record = JSON.parse(await readFile(join(locks, 'acme@recorded.owner'), 'utf8')) as { lock: string | null }
  t.match(record.lock, /^\d+:\d+$/, 'the record names its lock directory')
  await writer.kill()
  const w = await s.openWriter('acme/recorded')
  t.pass('taken over at once')
  await w.release()
})
