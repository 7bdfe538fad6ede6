import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { ChangeFeed } from '../../../plugins/storage/change-feed.js'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { until } from '../../helpers/until.js'

// Replicas on a shared volume (NFS and the like) on other hosts: inotify hears nothing of their writes, so the
// feed also polls. Here the watcher is switched off, which is what a listener on another host amounts to.

t.test('with no watcher, the poll hears each change, also two in a row, and not what was there before', async (t) => {
  const dir = join(await tempDir(t), 'changes')
  const writer = new ChangeFeed(dir)
  await writer.notify('acme@before')
  const heard: string[] = []
  const listener = new ChangeFeed(dir, { watch: false, pollMs: 50 })
  t.teardown(() => listener.close())
  t.ok(await listener.watch((key) => heard.push(key), (err) => { throw err }), 'it follows changes')
  await writer.notify('acme@one')
  await until('the poll to hear acme@one', () => heard.includes('acme@one'), 10_000)
  const seen = heard.length
  // Right after each other: the same tick of the file system's clock, told apart by the marker being a new file.
  await writer.notify('acme@one')
  await until('the poll to hear acme@one again', () => heard.length > seen, 10_000)
  t.notOk(heard.includes('acme@before'), 'a change made before it started is not reported')
  t.ok(heard.every((key) => !key.startsWith('.')), `only markers are reported (${heard.join(', ')})`)
  t.same((await readdir(dir)).sort(), ['acme@before', 'acme@one'], 'no note left half-written')
})

t.test('a store that cannot hear another process\'s import at once lists it within its poll', async (t) => {
  const models = await tempDir(t)
  // Its watcher switched off: as if the import ran on another host.
  const store = new ModelStore(models, { changes: { watch: false, pollMs: 100 } })
  await store.init()
  await store.watchChanges()
  t.teardown(() => store.close())
  const file = (await writeTinyGguf({ file: join(await tempDir(t), 'x.gguf'), seed: 3 })).file
  const child = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `
    const { ModelStore } = await import(${JSON.stringify(new URL('../../../plugins/storage/model-store.ts', import.meta.url).href)})
    const store = new ModelStore(${JSON.stringify(models)})
    await store.init()
    await store.import('acme/elsewhere', ${JSON.stringify(file)})
  `], { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr.on('data', (d) => { err += d })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.equal(code, 0, err)
  await until('the store to list the model imported by the other process', () => store.find('acme/elsewhere'), 10_000)
  t.pass('listed')
})
