import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../core/platform/config.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { PluginLoadError } from '../../core/platform/plugin-loader.js'
import { buildTestApp, tempDir } from '../helpers/app.js'

t.test('an admin plugin listed in config.yaml is loaded with its options', async (t) => {
  const dir = await tempDir(t)
  const example = join(PACKAGE_ROOT, 'docs/examples/uptime-plugin.js')
  const file = join(dir, 'config.yaml')
  await writeFile(file, [
    `data_dir: ${dir}`,
    'log_level: silent',
    'plugins:',
    `  - path: ${example}`,
    '    options: { route: /api/up }',
  ].join('\n'))
  const app = await buildTestApp(loadConfig({ config: file }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'GET', url: '/api/up' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.type(body.uptime_ms, 'number')
  t.equal(body.port, 11435)
  const fallback = await app.inject({ method: 'GET', url: '/api/uptime' })
  t.equal(fallback.statusCode, 404, 'the option changed the route')
})

t.test('a plugin path is relative to the config file', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'hello.mjs'), 'export default async function (app, opts) { app.get("/api/greeting", async () => ({ hello: opts.who })) }\n')
  await writeFile(join(dir, 'config.yaml'), `data_dir: ${dir}\nlog_level: silent\nplugins:\n  - path: ./hello.mjs\n    options: { who: admin }\n`)
  const app = await buildTestApp(loadConfig({ config: join(dir, 'config.yaml') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
  t.teardown(() => app.close())
  t.same((await app.inject({ method: 'GET', url: '/api/greeting' })).json(), { hello: 'admin' })
})

t.test('a plugin that cannot be loaded stops the start with its name', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'not-a-plugin.mjs'), 'export default 42\n')
  for (const [path, reason] of [['./missing.js', /could not be loaded: no file at .*missing\.js$/], ['./not-a-plugin.mjs', /not a Fastify plugin function/], ['no-such-package-xyz', /could not be loaded/]] as const) {
    await writeFile(join(dir, 'config.yaml'), `data_dir: ${dir}\nlog_level: silent\nplugins:\n  - path: ${path}\n`)
    const err = await t.rejects(buildTestApp(loadConfig({ config: join(dir, 'config.yaml') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' })))
    t.type(err, PluginLoadError)
    t.match((err as Error).message, reason)
  }
})
