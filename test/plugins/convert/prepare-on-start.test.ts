// The first run's converter, for real: `llamagate serve` started on a machine whose Python lacks numpy (a clean
// environment: an overlay over /usr and /var in a mount namespace of its own, where Debian's python3-numpy is
// removed) installs what is missing with apt-get in the background, and a SafeTensors pull sent at once waits,
// streaming the install as its progress, then converts. Its own process: the install takes ~10-20 s of one core.
import { execFile } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { ndjsonEvents, post } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { startServe } from '../../helpers/serve-process.js'
import { checkpoint, REQUIRE_CONVERTER, runtimeSource } from './fixtures.js'

const CLEAN_ENV = fileURLToPath(new URL('../../fixtures/clean-python-env.sh', import.meta.url))
const run = promisify(execFile)

/** Why a clean environment cannot be made here (not root, no mount namespaces, no apt-get), or null. */
async function cannotIsolate (): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'not root: a mount namespace with an overlay needs it'
  try {
    await run('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'command -v apt-get && mount -t tmpfs none /mnt'])
    return null
  } catch (err) {
    return `no mount namespace with apt-get here: ${(err as Error).message.split('\n')[0]}`
  }
}

t.test('a server whose Python lacks numpy installs it at start; a SafeTensors pull sent at once waits, then converts', async (t) => {
  const why = await cannotIsolate()
  if (why !== null) {
    if (process.env[REQUIRE_CONVERTER] === '1') t.fail(`${REQUIRE_CONVERTER}=1 and ${why}`)
    else t.pass('a clean environment', { skip: why })
    return
  }
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const dir = await checkpoint(t)
  hub.addRepo('acme/first-run', { files: await Promise.all((await readdir(dir)).map(async (f) => ({ path: f, content: await readFile(join(dir, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' }))) })

  const root = await tempDir(t)
  const config = join(root, 'config.yaml')
  await writeFile(config, JSON.stringify({
    data_dir: join(root, 'data'), log_level: 'info',
    runtime: 'cpu', runtimes: { cpu: { bin: (await cpuRuntime()).binDir } }, llama_cpp_src: await runtimeSource(),
    hub: { endpoint: hub.url }, default_options: { num_thread: 1 },
  }))
  const serve = await startServe(['--config', config, '--port', '0'], {}, 60_000, ['unshare', '--mount', '--propagation', 'private', CLEAN_ENV, join(root, 'overlay')])
  t.teardown(async () => { serve.child.kill('SIGTERM'); await serve.exited })

  const events = await ndjsonEvents(await post(`${serve.address}/api/pull`, { model: 'acme/first-run' }, { accept: 'application/x-ndjson' })) as Array<{ status: string, error?: string }>
  const statuses = events.map((e) => e.status ?? `error: ${e.error}`)
  const preparing = statuses.findIndex((s) => s.startsWith('preparing the converter: '))
  const converting = statuses.indexOf('converting to gguf (f16)')
  t.ok(preparing > 0, `the pull waits on the preparation and says so: ${statuses.slice(0, 8).join(' | ')}`)
  t.ok(statuses.some((s) => /^preparing the converter: .*python3-numpy/.test(s)), 'with apt-get\'s own lines about the package it installs')
  t.ok(converting > preparing, 'then converts')
  t.same(events.at(-1), { status: 'success' }, statuses.slice(-3).join(' | '))

  const status = await (await fetch(`${serve.address}/api/convert/status`)).json() as { ready: boolean, preparation: { state: string, route: string, detail: string | null } }
  t.equal(status.ready, true)
  t.match(status.preparation, { state: 'ready', route: 'apt', detail: null })
  t.match(serve.output(), /preparing the converter in the background: \/usr\/bin\/python3 lacks numpy.*: installing them \(apt-get\)/, 'the log says what it installs')
  t.match(serve.output(), /the converter is ready \(prepared with apt in \d+ s\)/)

  // ignore_eos: a random-weight model may end its turn at any token; held to the limit, it writes exactly 3.
  const chat = await post(`${serve.address}/api/chat`, { model: 'acme/first-run', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 3, ignore_eos: true } })
  t.equal(chat.status, 200, 'the converted model chats')
  t.match(await chat.json(), { done: true, done_reason: 'length', eval_count: 3 }, 'three tokens, the limit asked for')
  // The install happened inside the overlay only.
  await t.resolves(run('/usr/bin/python3', ['-c', 'import numpy']), 'this machine\'s own numpy was never touched')
})
