// The start's preparation of the converter (plugins/convert/converter-preparation.ts): what it decides, and how
// a conversion waits on it. The install itself, for real, is prepare-on-start.test.ts's.
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { ConverterPreparation } from '../../../plugins/convert/converter-preparation.js'
import { automaticRoute, type SetupHost } from '../../../plugins/convert/converter-setup.js'
import { startNote } from '../../../plugins/convert/doctor-check.js'
import type { ConverterReadiness } from '../../../plugins/convert/python-env.js'
import { tempDir } from '../../helpers/app.js'
import { checkpoint, realConverter, runtimeSource } from './fixtures.js'

const host = (over: Partial<SetupHost>): SetupHost => ({ root: false, aptGet: false, indexReachable: async () => false, ...over })

/** An interpreter: a sh script with `body`. */
async function python (t: Test, body: string): Promise<string> {
  const file = join(await tempDir(t), 'python3')
  await writeFile(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
  return file
}

t.test('the route a start may take without asking: apt-get as root on Debian, else a venv where an index answers, else why not', async (t) => {
  const src = await runtimeSource()
  const requirements = join(src!, 'requirements', 'requirements-convert_hf_to_gguf.txt')
  t.same(await automaticRoute(host({ root: true, aptGet: true, indexReachable: async () => { throw new Error('not asked') } }), requirements), { route: 'apt' })
  t.same(await automaticRoute(host({ root: false, aptGet: true, indexReachable: async () => true }), requirements), { route: 'venv' })
  t.same(await automaticRoute(host({ root: true, aptGet: false, indexReachable: async () => true }), requirements), { route: 'venv' }, 'root without apt-get (not Debian): a venv')
  t.match(await automaticRoute(host({ root: false, aptGet: true }), requirements), { route: null, why: /^not running as root \(apt-get needs it\), and no Python package index answers \(.+\) for a virtual environment$/ })
  t.match(await automaticRoute(host({ root: true, indexReachable: async () => true }), '/nonexistent/requirements.txt'), { route: null, why: /^no apt-get \(not Debian\/Ubuntu\)/ }, 'no requirements file: no venv')
})

t.test('on a machine whose Python has the modules, a start checks in ~50 ms and installs nothing', async (t) => {
  const converter = await realConverter(t)
  const preparation = new ConverterPreparation(converter, { enabled: true, python: null, dataDir: await tempDir(t), host: host({ root: true, aptGet: true }) })
  t.match(preparation.status, { state: 'idle', started_at: null })
  const started = preparation.start()
  t.equal(preparation.status.state, 'checking', 'checking from the moment it starts')
  t.equal(preparation.pending, true)
  await started
  t.match(preparation.status, { state: 'not_needed', route: null, detail: null })
  t.equal(preparation.pending, false)
  t.equal(preparation.start(), started, 'once per start')
})

t.test('conversion.auto_setup false: nothing is checked or installed', async (t) => {
  const converter = await realConverter(t)
  const preparation = new ConverterPreparation(converter, { enabled: false, python: null, dataDir: await tempDir(t) })
  await preparation.start()
  t.match(preparation.status, { state: 'off', started_at: null })
})

t.test('conversion.python names an interpreter without the modules: nothing is installed into it, and conversions fail at once with 503', async (t) => {
  const own = await python(t, 'exec /usr/bin/python3 -S "$@"') // -S: no site-packages, so numpy and torch are missing
  const converter = await realConverter(t, { python: own })
  const preparation = new ConverterPreparation(converter, { enabled: true, python: own, dataDir: await tempDir(t), host: host({ root: true, aptGet: true }) })
  await preparation.start()
  t.match(preparation.status, { state: 'unavailable', route: null })
  t.match(preparation.status.detail, `${own} lacks numpy, torch, sentencepiece, tqdm, yaml; conversion.python names an interpreter of your own, which llamagate installs nothing into`)
  await t.rejects(converter.convert({ modelDir: await checkpoint(t), dtype: 'f16' }), { statusCode: 503, message: /SafeTensors conversion is not available here/ })
})

t.test('no way to install without asking: unavailable, saying why and what to run', async (t) => {
  const converter = await realConverter(t, { python: null })
  // The candidates are the real ones here (they have the modules), so a host that allows nothing is seen only
  // through the check's verdict for an interpreter that lacks them: the doctor's note, from the same route.
  const readiness: ConverterReadiness = { ready: false, python: null, shim: false, papered: [], llamaCppSrc: converter.sourceTree(), quantize: null, problems: ['x lacks numpy'], fix: 'npm run setup:converter' }
  const config = { conversion: { python: null, timeoutMs: 1, autoSetup: true } }
  t.match(await startNote(config, readiness, host({})), /^a server start cannot install it by itself: no apt-get \(not Debian\/Ubuntu\), and no Python package index answers/)
  t.equal(await startNote(config, readiness, host({ root: true, aptGet: true })), 'a server start installs it in the background (Debian\'s packages with apt-get); GET /api/convert/status shows how far')
  t.equal(await startNote({ conversion: { ...config.conversion, autoSetup: false } }, readiness, host({})), 'conversion.auto_setup is off: a server start installs nothing')
  t.equal(await startNote(config, { ...readiness, ready: true }, host({})), null, 'nothing to say when ready')
})

t.test('a conversion waits while the start checks, hearing why; one that leaves is answered at once, the others go on', async (t) => {
  const fifo = join(await tempDir(t), 'release')
  await promisify(execFile)('mkfifo', [fifo])
  // The check blocks until the test writes to the fifo: a start held at "checking" without a sleep.
  const held = await python(t, `read line < ${fifo}\nexec /usr/bin/python3 "$@"`)
  const converter = await realConverter(t, { python: held })
  const preparation = new ConverterPreparation(converter, { enabled: true, python: held, dataDir: await tempDir(t) })
  const started = preparation.start()
  const heard: string[] = []
  const staying = preparation.wait({ onProgress: (p) => heard.push(p.status) })
  const leaving = new AbortController()
  const left = preparation.wait({ signal: leaving.signal })
  leaving.abort(new Error('the client went away'))
  await t.rejects(left, { message: 'the client went away' })
  t.equal(preparation.pending, true, 'still checking for the others')
  await writeFile(fifo, 'go\n')
  await staying
  await started
  t.same(heard, ['preparing the converter: checking what it needs'])
  t.equal(preparation.status.state, 'not_needed')
  await preparation.wait({}) // nothing pending: at once
})
