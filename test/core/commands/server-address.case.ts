import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { serveForCli } from '../../helpers/cli-server.js'
import { runCli } from '../../helpers/serve-process.js'

t.test('the address comes from --host, LLAMAGATE_HOST or config.yaml, and the key from LLAMAGATE_API_KEY', async (t) => {
  const { url } = await serveForCli(t, { auth: { api_keys: ['sekret'] } })
  const dir = await tempDir(t)
  const port = new URL(url).port
  const noKey = await runCli(['list', '--host', url])
  t.equal(noKey.code, 1)
  t.match(noKey.stderr, /^llamagate list: .*\(set LLAMAGATE_API_KEY to one of the server's API keys\)\n$/)
  const keyed = { LLAMAGATE_API_KEY: 'sekret' }
  t.equal((await runCli(['list', '--host', url], keyed)).code, 0, '--host URL')
  t.equal((await runCli(['list', '--host', `127.0.0.1:${port}`], keyed)).code, 0, '--host host:port')
  t.equal((await runCli(['list'], { ...keyed, LLAMAGATE_HOST: url })).code, 0, 'LLAMAGATE_HOST as a URL')
  t.equal((await runCli(['list'], { ...keyed, LLAMAGATE_HOST: '0.0.0.0', LLAMAGATE_PORT: port })).code, 0, 'LLAMAGATE_HOST and LLAMAGATE_PORT as serve reads them; a wildcard is reached on loopback')
  const clientConfig = join(dir, 'client.yaml')
  await writeFile(clientConfig, `port: ${port}\n`)
  const fromConfig = await runCli(['list', '--config', clientConfig], keyed)
  t.equal(fromConfig.code, 0, fromConfig.stderr)
  t.match(fromConfig.stdout, /acme\/qwen/, 'config.yaml\'s port')
  const badConfig = await runCli(['list', '--config', join(dir, 'absent.yaml')], keyed)
  t.equal(badConfig.code, 2)
  t.match(badConfig.stderr, /^llamagate list: invalid configuration:\n  config file \S*absent\.yaml does not exist\n$/)
})
