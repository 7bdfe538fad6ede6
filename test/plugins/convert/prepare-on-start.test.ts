// The first run's converter, for real: `llamagate serve` started on a machine whose Python lacks numpy (a clean
// environment: an overlay over /usr and /var in a mount namespace of its own, where Debian's python3-numpy is
// removed) installs what is missing with apt-get in the background, and a SafeTensors pull sent at once waits,
// streaming the install as its progress, then converts. Its own process: the install takes ~10-20 s of one core.
// apt-get is held (clean-python-env.sh's APT_GATE) until the pull says it waits on it: on a slow machine the install
// could otherwise end before the pull reaches its conversion.
import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import { open, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { post } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { startServe } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'
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
  const gate = join(root, 'apt-gate')
  await run('mkfifo', [gate])
  const serve = await startServe(['--config', config, '--port', '0'], { APT_GATE: gate }, 60_000, ['unshare', '--mount', '--propagation', 'private', CLEAN_ENV, join(root, 'overlay')])
  t.teardown(async () => {
    // An apt-get still held (the test failed before it let it go) is let go, so that nothing is left waiting.
    const handle = await open(gate, constants.O_RDWR | constants.O_NONBLOCK)
    await handle.write('go\n').finally(() => handle.close())
    serve.child.kill('SIGTERM')
    await serve.exited
  })

  // A pull that never says it waits would hold apt-get, and so itself, for ever: cut well before tap's timeout, naming why.
  const deadline = AbortSignal.timeout(150_000)
  const res = await post(`${serve.address}/api/pull`, { model: 'acme/first-run' }, { accept: 'application/x-ndjson' }, deadline)
  const events: Array<{ status: string, error?: string }> = []
  let letGo: Promise<void> | null = null
  let buffer = ''
  const chunks = res.body!.pipeThrough(new TextDecoderStream())
  deadline.addEventListener('abort', () => { if (letGo === null) t.fail(`the pull never said it waits on the converter's preparation: ${events.map((e) => e.status).join(' | ')}`) })
  for await (const chunk of chunks) {
    buffer += chunk
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).trim()
      buffer = buffer.slice(nl + 1)
      if (line === '') continue
      const event = JSON.parse(line) as { status: string, error?: string }
      events.push(event)
      // The pull waits on the preparation: now apt-get may run (opening the FIFO waits for its reader).
      if (letGo === null && event.status?.startsWith('preparing the converter: ')) letGo = writeFile(gate, 'go\n')
    }
  }
  await letGo
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
  await until('the log says the converter is ready', () => /the converter is ready \(prepared with apt in \d+ s\)/.test(serve.output()))
  t.pass('the log says when the converter is ready')

  // ignore_eos: a random-weight model may end its turn at any token; held to the limit, it writes exactly 3.
  const chat = await post(`${serve.address}/api/chat`, { model: 'acme/first-run', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 3, ignore_eos: true } })
  t.equal(chat.status, 200, 'the converted model chats')
  t.match(await chat.json(), { done: true, done_reason: 'length', eval_count: 3 }, 'three tokens, the limit asked for')
  // The install happened inside the overlay only.
  await t.resolves(run('/usr/bin/python3', ['-c', 'import numpy']), 'this machine\'s own numpy was never touched')
})
