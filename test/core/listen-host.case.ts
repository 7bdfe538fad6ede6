import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../core/platform/config.js'
import { SHIPPED_CONFIG } from '../../core/base/paths.js'
import { tempDir } from '../helpers/app.js'

// As OLLAMA_HOST is read: a host may carry its port, and the higher layer's port wins.
t.test('a host written with its port listens there', async (t) => {
  const fromEnv = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: '0.0.0.0:8080' })
  t.same([fromEnv.host, fromEnv.port], ['0.0.0.0', 8080], 'over the config file\'s port')
  const v6 = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: '[::1]:9000' })
  t.same([v6.host, v6.port], ['::1', 9000])
  const url = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: 'http://127.0.0.2:9001' })
  t.same([url.host, url.port], ['127.0.0.2', 9001])
  const flag = loadConfig({ config: SHIPPED_CONFIG, port: '9100' }, { LLAMAGATE_HOST: '0.0.0.0:8080' })
  t.same([flag.host, flag.port], ['0.0.0.0', 9100], 'a port on the command line wins over the environment\'s host')
  const both = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: '127.0.0.1:8080', LLAMAGATE_PORT: '8080' })
  t.same([both.host, both.port], ['127.0.0.1', 8080], 'the same port twice is one')
  const fromUrlNoPort = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: 'http://localhost' })
  t.same([fromUrlNoPort.host, fromUrlNoPort.port], ['localhost', 11435])
})

t.test('a bare name or address is left whole', async (t) => {
  for (const host of ['::1', '::', 'localhost', '10.0.0.5', 'fe80::1']) {
    const config = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: host })
    t.same([config.host, config.port], [host, 11435], host)
  }
})

t.test('a config file whose host and port name two ports is refused, naming both', async (t) => {
  const dir = await tempDir(t, 'llamagate-host-')
  const file = join(dir, 'config.yaml')
  await writeFile(file, 'host: 127.0.0.1:18555\nport: 11435\n')
  t.throws(() => loadConfig({ config: file }, {}), /host = "127\.0\.0\.1:18555" carries port 18555, and port = 11435: give the port once/)
  await writeFile(file, 'host: 127.0.0.1:18555\n')
  const config = loadConfig({ config: file }, {})
  t.same([config.host, config.port], ['127.0.0.1', 18555], 'without a port of its own, the file\'s host gives it')
})

t.test('what names no address to listen on is refused by key and source', async (t) => {
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: 'http://127.0.0.1:8080/v1' }), /host = "http:\/\/127\.0\.0\.1:8080\/v1" is not allowed: expected a host name or address.*\(from LLAMAGATE_HOST\)/)
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: 'http://[nope' }), /is not allowed: expected a host name/)
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOST: '0.0.0.0:99999' }), /host = "0\.0\.0\.0:99999" is not allowed: the port must be 0-65535 \(from LLAMAGATE_HOST\)/)
})
