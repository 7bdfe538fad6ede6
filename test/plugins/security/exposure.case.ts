import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { exposureRisk, isLoopbackHost } from '../../../plugins/security/exposure.js'
import { tempDir } from '../../helpers/app.js'
import { runCli, startServe } from '../../helpers/serve-process.js'

t.test('loopback addresses, and what is not one', async (t) => {
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) t.ok(isLoopbackHost(host), host)
  for (const host of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'myhost.example', '128.0.0.1', '12.7.0.1', '217.0.0.1', '1127.0.0.1', '127.0.0.01', '127.0.0']) t.notOk(isLoopbackHost(host), host)
  t.equal(exposureRisk('127.0.0.1', []), null, 'loopback without keys: no risk')
  t.equal(exposureRisk('0.0.0.0', ['k']), null, 'keys set: no risk')
  t.match(exposureRisk('0.0.0.0', []), /^listening on 0\.0\.0\.0 with no API keys: anyone who can reach this address can use every model/)
})

t.test('serve on every interface without keys: a WARNING at start; refused when config.yaml asks', async (t) => {
  const dir = await tempDir(t)
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nlog_level: info\nport: 0\n`)
  const open = await startServe(['--config', config, '--host', '0.0.0.0'])
  t.teardown(() => { open.child.kill('SIGKILL') })
  const warned = open.output()
  open.child.kill('SIGTERM')
  await open.exited
  t.match(warned, /WARNING: listening on 0\.0\.0\.0 with no API keys: anyone who can reach this address can use every model.*require_keys_off_loopback: true in config\.yaml makes this a refusal to start/)
  t.match(warned, /"level":40/, 'at warn level')

  const keyed = await startServe(['--config', config, '--host', '0.0.0.0'], { LLAMAGATE_API_KEYS: 'secret' })
  t.teardown(() => { keyed.child.kill('SIGKILL') })
  keyed.child.kill('SIGTERM')
  await keyed.exited
  t.notMatch(keyed.output(), /WARNING/, 'with API keys: no warning')

  const loop = await startServe(['--config', config, '--host', '127.0.0.1'])
  t.teardown(() => { loop.child.kill('SIGKILL') })
  loop.child.kill('SIGTERM')
  await loop.exited
  t.notMatch(loop.output(), /WARNING/, 'on loopback: no warning')

  await writeFile(config, `data_dir: ${dir}\nport: 0\nauth:\n  require_keys_off_loopback: true\n`)
  const refused = await runCli(['serve', '--config', config, '--host', '0.0.0.0'])
  t.equal(refused.code, 2, 'refused to start')
  t.match(refused.stderr, /^llamagate: refusing to start: listening on 0\.0\.0\.0 with no API keys.*\(auth\.require_keys_off_loopback is true\)/)
  const ollamaOpen = await runCli(['serve', '--config', config], { LLAMAGATE_OLLAMA_LISTEN: '0.0.0.0:0' })
  t.equal(ollamaOpen.code, 2, 'the Ollama address off loopback without keys: refused too')
  t.match(ollamaOpen.stderr, /^llamagate: refusing to start: listening on 0\.0\.0\.0 with no API keys/)
  const allowed = await startServe(['--config', config, '--host', '0.0.0.0'], { LLAMAGATE_API_KEYS: 'secret' })
  t.teardown(() => { allowed.child.kill('SIGKILL') })
  t.match(allowed.address, /^http:/, 'with keys it starts')
  allowed.child.kill('SIGTERM')
  await allowed.exited
})

t.test('isLoopbackHost: the one rule for listen addresses, Host headers and RPC workers', async (t) => {
  for (const host of ['LOCALHOST', 'app.localhost', '[::1]', '0:0:0:0:0:0:0:1', '[::ffff:127.0.0.1]', '127.255.0.1']) t.ok(isLoopbackHost(host), host)
  for (const host of ['localhost.example', '::ffff:10.0.0.1', '[::]', '', 'fe80::1']) t.notOk(isLoopbackHost(host), host)
})
