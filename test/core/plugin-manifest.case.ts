import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ConfigError } from '../../core/config/config-error.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { PluginLoadError } from '../../core/platform/plugin-loader.js'
import { loadConfigAndPlugins } from '../../core/platform/plugin-manifests.js'
import { buildTestApp } from '../helpers/app.js'
import { userEnv } from '../helpers/child-env.js'
import { installPlugin, projectDir } from '../helpers/example-plugin.js'

// A third party's plugin with a manifest (docs/examples/motd-plugin.ts), installed by package name beside config.yaml:
// its config section, CLI command and doctor check work through the real CLI (dist/, `npm run build` first), as the
// built-ins' do.

const EXAMPLE = join(PACKAGE_ROOT, 'docs/examples/motd-plugin.ts')
const CLI = join(PACKAGE_ROOT, 'dist/core/cli/cli.js')
type Test = Parameters<typeof projectDir>[0]

/** A project with the example installed and a config.yaml listing it, `extra` appended; its config file. */
async function project (t: Test, extra: string, edit?: (code: string) => string): Promise<string> {
  const dir = await projectDir(t)
  const source = await readFile(EXAMPLE, 'utf8')
  await installPlugin(dir, 'llamagate-plugin-motd', edit ? edit(source) : source)
  const file = join(dir, 'config.yaml')
  await writeFile(file, `data_dir: ${dir}\nlog_level: silent\nplugins:\n  - path: llamagate-plugin-motd\n${extra}`)
  return file
}

async function cli (args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  // A user's run: no test runner hooks (the built CLI, not the sources).
  return promisify(execFile)(process.execPath, [CLI, ...args], { env: userEnv({ LLAMAGATE_HOST: 'http://127.0.0.1:9' }) })
    .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (err: { code: number, stdout: string, stderr: string }) => err)
}

t.test('its command runs and shows in --help; doctor runs its check, naming it; a bad key names the plugin', async (t) => {
  const file = await project(t, 'motd: { text: Models reset at six }\n')
  const motd = await cli(['motd', '--config', file])
  t.equal(motd.code, 0, motd.stderr)
  t.equal(motd.stdout, 'Models reset at six\n')
  const help = await cli(['--help', '--config', file])
  t.match(help.stdout, /^ {2}motd +print the message of the day \(plugin motd\)$/m)
  const doctor = await cli(['doctor', '--config', file])
  t.match(doctor.stdout, /^✓ motd \(plugin motd\): 19 characters$/m)
  t.match(doctor.stdout, /^✓ config: .*config\.yaml$/m, 'the built-ins\' checks still run')
  const bad = await project(t, 'motd: { text: 5 }\n')
  const refused = await cli(['doctor', '--config', bad])
  t.equal(refused.code, 2)
  t.match(refused.stderr, /^llamagate doctor: invalid configuration:\n {2}plugin "motd": motd\.text = 5 is not allowed: must be string \(from .*config\.yaml\)$/m)
})

t.test('its section: defaults, the environment, its own problems, a key another section has', async (t) => {
  const file = await project(t, '')
  const { config } = await loadConfigAndPlugins({ config: file }, { MOTD_TEXT: 'from env' })
  t.same((config as unknown as { motd: unknown }).motd, { text: 'from env', maxLength: 500 })
  const long = await project(t, 'motd: { text: toolong, max_length: 3 }\nkeep_alive: 10m\n')
  const err = await t.rejects(loadConfigAndPlugins({ config: long }, {}))
  t.type(err, ConfigError)
  t.same((err as ConfigError).problems, ['plugin "motd": motd.text is longer than motd.max_length (3)'])
  const unknown = await project(t, 'motto: hi\n')
  t.match((await t.rejects(loadConfigAndPlugins({ config: unknown }, {})) as Error).message, /motto is not a known key; allowed keys here: .*motd/)
  const taken = await project(t, '', (code) => code.replace('    motd: Type.Object({', '    keep_alive: Type.String(),\n    motd: Type.Object({'))
  t.match((await t.rejects(loadConfigAndPlugins({ config: taken }, {})) as Error).message, /the motd plugin's config section claims keep_alive, which is taken/)
})

t.test('a malformed or throwing manifest names the plugin', async (t) => {
  const malformed = await project(t, '', (code) => code.replace('commands: [motd],', 'commands: motd,'))
  t.match((await t.rejects(loadConfigAndPlugins({ config: malformed }, {})) as Error).message,
    /^plugin "motd" \(llamagate-plugin-motd\) could not be loaded: its manifest has commands that are not a list/)
  const throwing = await project(t, '', (code) => code.replace('config: async () => section,', 'config: async () => { throw new Error(\'no schema here\') },'))
  const err = await t.rejects(loadConfigAndPlugins({ config: throwing }, {}))
  t.type(err, PluginLoadError)
  t.match((err as Error).message, /^plugin "motd" \(llamagate-plugin-motd\) could not be loaded: its manifest's config threw: no schema here$/)
  const doctor = await project(t, '', (code) => code.replace('async doctor ({ config }) {', 'async doctor ({ config }) {\n      if (config) throw new Error(\'disk gone\')'))
  const { config, manifests } = await loadConfigAndPlugins({ config: doctor }, {})
  const report = await manifests.find((m) => m.name === 'motd')!.doctor!({ config, shared: new Map() })
  t.same(report.checks, [{ name: 'plugin motd', status: 'fail', message: 'its doctor check threw: disk gone', fix: 'see the motd plugin\'s documentation' }])
})

t.test('@fastify/sensible: a plugin\'s httpErrors are answered in each surface\'s shape', async (t) => {
  const { config } = await loadConfigAndPlugins({ config: await project(t, '') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' })
  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  const get = async (url: string): Promise<unknown> => {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, url)
    return res.json()
  }
  t.same(await get('/api/motd'), { error: 'no message of the day is set' })
  t.same(await get('/v1/motd'), { error: { message: 'no message of the day is set', type: 'invalid_request_error', param: null, code: 'not_found' } })
  t.same(await get('/v1/messages/motd'), { type: 'error', error: { type: 'not_found_error', message: 'no message of the day is set' }, request_id: null })
})
