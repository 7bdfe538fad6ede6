import { chmod, mkdir, readFile, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { inspectBuild } from '../../runtimes/inspect-build.js'
import { tempDir } from '../helpers/app.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { spawnsDuring } from '../helpers/spawns.js'

// A build's --version and --help are read once per binary in a process: a test file, or a server that checks its
// builds again, does not start llama-server twice more for each look.

async function fakeServer (dir: string, version: string): Promise<string> {
  const bin = join(dir, 'bin')
  await mkdir(bin, { recursive: true })
  const script = `#!/bin/sh
case "$1" in
  --version) ${version === 'broken' ? 'echo "error while loading shared libraries" >&2; exit 127' : `echo "version: ${version} (build 1, commit abc1234)"`} ;;
  --help) echo "--rpc SERVERS  a list" ;;
  --list-devices) echo "Available devices:" ;;
esac
`
  await writeFile(join(bin, 'llama-server'), script)
  await chmod(join(bin, 'llama-server'), 0o755)
  return bin
}

t.test('the same binary is run once for --version and --help; a changed one is read again', async (t) => {
  const bin = await fakeServer(await tempDir(t), '1.0')
  let first: Awaited<ReturnType<typeof inspectBuild>> | undefined
  t.equal(await spawnsDuring(async () => { first = await inspectBuild(bin, 'config', 'cpu') }), 2, '--version and --help')
  t.match(first, { version: '1.0', commit: 'abc1234', backend: 'cpu', features: { rpc: true } })
  let again: Awaited<ReturnType<typeof inspectBuild>> | undefined
  t.equal(await spawnsDuring(async () => { again = await inspectBuild(bin, 'built', 'cpu') }), 0, 'looked at again: no process')
  t.same(again, { ...first, source: 'built' }, 'the same description, with the source asked for')
  t.equal(await spawnsDuring(() => inspectBuild(bin, 'path', null)), 1, 'a build of unknown backend still lists its devices (hardware, not the binary)')

  await fakeServer(join(bin, '..'), '2.0')
  await utimes(join(bin, 'llama-server'), new Date(), new Date(Date.now() + 5000))
  t.match(await inspectBuild(bin, 'config', 'cpu'), { version: '2.0' }, 'a rebuilt binary is read again')
})

t.test('a binary that does not run is not remembered as such: fixed, it is read', async (t) => {
  const dir = await tempDir(t)
  const bin = await fakeServer(dir, 'broken')
  t.match(await inspectBuild(bin, 'config', 'cpu'), { error: /--version failed \(exit 127\): error while loading shared libraries/ })
  t.equal(await spawnsDuring(() => inspectBuild(bin, 'config', 'cpu')), 1, 'tried again')
  await fakeServer(dir, '3.0')
  await utimes(join(bin, 'llama-server'), new Date(), new Date(Date.now() + 5000))
  t.match(await inspectBuild(bin, 'config', 'cpu'), { version: '3.0' })
})

t.test('cacheSalt: whether the binary reads a request\'s cache_salt (llamagate\'s patch set), looked for in the binary itself', async (t) => {
  const dir = await tempDir(t)
  const plain = await fakeServer(join(dir, 'plain'), '1.0')
  t.match(await inspectBuild(plain, 'config', 'cpu'), { features: { cacheSalt: false } }, 'a build that never names the field')
  const salted = await fakeServer(join(dir, 'salted'), '1.0')
  // The field's name where the server's request parser keeps it: in the binary's text.
  await writeFile(join(salted, 'llama-server'), `${await readFile(join(salted, 'llama-server'), 'utf8')}# add(new field_str("cache_salt"))\n`)
  t.match(await inspectBuild(salted, 'config', 'cpu'), { features: { cacheSalt: true } })
  t.match(await cpuRuntime(), { features: { cacheSalt: true } }, 'the runtime the tests run is built with the patch set')
})

t.test('slotCheckpoints and cachedPromptSaves: each patch\'s own text in the binary', async (t) => {
  const dir = await tempDir(t)
  const plain = await fakeServer(join(dir, 'plain'), '1.0')
  t.match(await inspectBuild(plain, 'config', 'cpu'), { features: { slotCheckpoints: false, cachedPromptSaves: false } })
  const checkpoints = await fakeServer(join(dir, 'checkpoints'), '1.0')
  await writeFile(join(checkpoints, 'llama-server'), `${await readFile(join(checkpoints, 'llama-server'), 'utf8')}# slot checkpoints: implausible checkpoint\n`)
  t.match(await inspectBuild(checkpoints, 'config', 'cpu'), { features: { slotCheckpoints: true, cachedPromptSaves: false } })
  const cached = await fakeServer(join(dir, 'cached'), '1.0')
  await writeFile(join(cached, 'llama-server'), `${await readFile(join(cached, 'llama-server'), 'utf8')}# No cached prompt at index\n`)
  t.match(await inspectBuild(cached, 'config', 'cpu'), { features: { slotCheckpoints: false, cachedPromptSaves: true } })
  t.match(await cpuRuntime(), { features: { slotCheckpoints: true, cachedPromptSaves: true } }, 'the runtime the tests run carries both')
})
