import { existsSync } from 'node:fs'
import { mkdir, readlink, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { lendRuntimes, noRuntimeError } from '../../core/testing/test-runtime.js'
import { tempDir } from '../helpers/app.js'

// llamagate/testing lends its gateway the built runtimes and lets the gateway's own registry choose among them.

t.test('with no build and no LLAMAGATE_TEST_RUNTIME_BIN, the kit refuses with the command that builds one', async (t) => {
  const home = await tempDir(t)
  const data = await tempDir(t)
  await t.rejects(lendRuntimes(data, { LLAMAGATE_HOME: home }), /no usable CPU llama-server for the tests \(nothing under .*runtimes\)\. Build one .*runtime:build -- --backend cpu/)
  t.notOk(existsSync(join(data, 'runtimes')), 'nothing lent')
})

t.test('the built runtimes are lent as a link, which removing the data folder leaves in place', async (t) => {
  const home = await tempDir(t)
  const bin = join(home, 'runtimes', 'llama.cpp-v9.9.9', 'cpu', 'bin')
  await mkdir(bin, { recursive: true })
  await writeFile(join(bin, 'llama-server'), '')
  const data = await tempDir(t)
  t.same(await lendRuntimes(data, { LLAMAGATE_HOME: home }), {}, 'config.yaml names no build: the registry finds them')
  t.equal(await readlink(join(data, 'runtimes')), join(home, 'runtimes'))
  await rm(data, { recursive: true, force: true })
  t.ok(existsSync(join(bin, 'llama-server')), 'the builds outlive the test gateway')
})

t.test('LLAMAGATE_TEST_RUNTIME_BIN is config.yaml\'s cpu build, tried before those built', async (t) => {
  const data = await tempDir(t)
  t.same(await lendRuntimes(data, { LLAMAGATE_HOME: await tempDir(t), LLAMAGATE_TEST_RUNTIME_BIN: '/opt/llama/bin' }), { cpu: { bin: '/opt/llama/bin' } })
})

t.test('a gateway that chose no build is an error naming each one that did not run', async (t) => {
  t.equal(noRuntimeError({ chosen: { backend: 'cpu' }, reason: 'forced by config (runtime: cpu)', rejected: [] }), null)
  const err = noRuntimeError({ chosen: null, reason: 'runtime cpu is forced by config but no cpu build was found', rejected: [{ binDir: '/x/bin', error: 'exited with code 127' }] })
  t.match(err?.message, /^no usable CPU llama-server for the tests \(runtime cpu is forced .*; \/x\/bin: exited with code 127\)\. Build one/)
})
