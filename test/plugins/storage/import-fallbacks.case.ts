import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { lstat, mkdtemp, readFile, readlink, rm, stat } from 'node:fs/promises'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'

// docs/api.md: `/api/import` "registers a GGUF on disk (hard link, else symlink, else copy)"; link-file.ts: a hard
// link on the same file system, a symbolic link to another one, a copy where the file system has no links. Each
// way ends with a model that loads and answers, and the manifest says which way it was.

const SHM = '/dev/shm'
const sha256 = async (file: string): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex')

async function shmDir (t: Test): Promise<string> {
  const dir = await mkdtemp(join(SHM, 'llamagate-import-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function serve (t: Test): Promise<{ url: string, app: Awaited<ReturnType<typeof serveTinyModels>>['app'] }> {
  return serveTinyModels(t, [], { default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 2 } })
}

/** Imports through the HTTP API and returns the record and where its GGUF now is. */
async function importModel (t: Test, url: string, app: Awaited<ReturnType<typeof serveTinyModels>>['app'], model: string, path: string): Promise<{ target: string, link: string | undefined }> {
  const res = await post(`${url}/api/import`, { model, path })
  t.equal(res.status, 200, `${model}: imported`)
  const record = app.store.get(model)
  return { target: app.store.ggufPath(record)!, link: record.manifest.source.link }
}

async function answers (t: Test, url: string, model: string, what: string): Promise<void> {
  const res = await post(`${url}/api/generate`, { model, prompt: 'hi', stream: false })
  t.equal(res.status, 200, `${what}: the model loads and answers`)
  t.equal(((await res.json()) as { eval_count: number }).eval_count, 2, `${what}: its two tokens`)
}

t.test('same file system: a hard link (the same inode), which outlives the original', async (t) => {
  const { url, app } = await serve(t)
  const source = join(await tempDir(t), 'same-fs.gguf')
  await writeTinyGguf({ file: source, seed: 3 })
  const { target, link } = await importModel(t, url, app, 'acme/hard', source)
  t.equal(link, 'hardlink', 'the manifest says hardlink')
  t.equal((await stat(target)).ino, (await stat(source)).ino, 'the same inode: nothing copied')
  t.notOk((await lstat(target)).isSymbolicLink())
  await rm(source)
  await answers(t, url, 'acme/hard', 'after the original was deleted')
})

t.test('another file system (/dev/shm): a symbolic link to the original, by /api/import and by the CLI', async (t) => {
  const models = await tempDir(t)
  const [shmDev, modelsDev] = [(await stat(SHM)).dev, (await stat(models)).dev]
  if (shmDev === modelsDev) {
    const why = `${SHM} and the temporary folder are one file system here (device ${shmDev}): no second file system to link across`
    // On CI (which sets CI) the symlink fall-back must be shown, not skipped; a developer's machine may lack one.
    if (process.env.CI) t.fail(why)
    else t.pass(why, { skip: why })
    return
  }
  const { url, app } = await serve(t)
  const source = join(await shmDir(t), 'other-fs.gguf')
  await writeTinyGguf({ file: source, seed: 4 })
  const { target, link } = await importModel(t, url, app, 'acme/soft', source)
  t.equal(link, 'symlink', 'the manifest says symlink')
  t.ok((await lstat(target)).isSymbolicLink(), 'the model\'s file is a symbolic link')
  t.equal(await readlink(target), source, 'to the original, by its absolute path')
  t.equal(app.store.get('acme/soft').files[0]!.sha256, await sha256(source), 'the digest of the original\'s bytes')
  await answers(t, url, 'acme/soft', 'through the symbolic link')
  // The CLI takes the same way and says so.
  const cli = await runCli(['import', 'acme/soft-cli', source, '--models', models], { LLAMAGATE_HOME: models })
  t.equal(cli.code, 0, `llamagate import exits 0 (${cli.stderr.trim()})`)
  t.match(cli.stdout, /imported acme\/soft-cli \(\d+ bytes, symlink\)/, 'and says symlink')
  t.ok((await lstat(join(models, 'acme', 'soft-cli', 'other-fs.gguf'))).isSymbolicLink())
})

/**
 * Makes `link` and `symlink` of node:fs/promises fail as on a file system without links (FAT, exFAT, many SMB
 * shares refuse both with EPERM), for this process, until the test ends. This machine has no such file system to
 * mount, so the refusal is simulated where the store meets the file system.
 */
function refuseLinks (t: Test, which: Array<'link' | 'symlink'>): void {
  const fsp = createRequire(import.meta.url)('node:fs/promises') as Record<string, unknown>
  const saved = Object.fromEntries(which.map((name) => [name, fsp[name]]))
  for (const name of which) {
    fsp[name] = async (from: string, to: string) => {
      throw Object.assign(new Error(`EPERM: operation not permitted, ${name} '${from}' -> '${to}'`), { code: 'EPERM', syscall: name })
    }
  }
  syncBuiltinESMExports()
  t.teardown(() => {
    Object.assign(fsp, saved)
    syncBuiltinESMExports()
  })
}

t.test('a file system that refuses hard links only: a symbolic link, even on the same file system', async (t) => {
  const { url, app } = await serve(t)
  const source = join(await tempDir(t), 'no-hardlinks.gguf')
  await writeTinyGguf({ file: source, seed: 5 })
  refuseLinks(t, ['link'])
  const { target, link } = await importModel(t, url, app, 'acme/no-hard', source)
  t.equal(link, 'symlink')
  t.equal(await readlink(target), source)
  await answers(t, url, 'acme/no-hard', 'through the symbolic link')
})

t.test('a file system without links: a copy, byte for byte, which outlives the original', async (t) => {
  const { url, app } = await serve(t)
  const source = join(await tempDir(t), 'no-links.gguf')
  await writeTinyGguf({ file: source, seed: 6 })
  refuseLinks(t, ['link', 'symlink'])
  const { target, link } = await importModel(t, url, app, 'acme/copied', source)
  t.equal(link, 'copy', 'the manifest says copy')
  const [copied, original] = [await lstat(target), await stat(source)]
  t.ok(copied.isFile() && !copied.isSymbolicLink(), 'a regular file')
  t.not(copied.ino, original.ino, 'another inode')
  t.equal(copied.size, original.size)
  t.equal(await sha256(target), await sha256(source), 'the same bytes')
  t.equal(app.store.get('acme/copied').files[0]!.sha256, await sha256(source), 'the manifest\'s digest')
  await rm(source)
  t.notOk(existsSync(source))
  await answers(t, url, 'acme/copied', 'after the original was deleted')
})
