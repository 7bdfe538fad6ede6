import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { readFile, symlink, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import { transform } from 'esbuild'
import t from 'tap'
import { loadConfig } from '../../core/platform/config.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { PluginLoadError } from '../../core/platform/plugin-loader.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { exampleSource, installPlugin, projectDir } from '../helpers/example-plugin.js'

// The greeting example's own test, on llamagate/testing.
const EXAMPLE_TEST = join(PACKAGE_ROOT, 'docs/examples/greeting-plugin.test.ts')

/** Installs the greeting example, compiled to JavaScript, as the package `name` under `dir`'s node_modules. */
async function installExample (dir: string, name: string, edit = (code: string) => code): Promise<void> {
  await installPlugin(dir, name, edit(await exampleSource('greeting-plugin.ts')))
}

async function start (dir: string, plugins: string, dataDir = dir): Promise<Awaited<ReturnType<typeof buildTestApp>>> {
  await writeFile(join(dir, 'config.yaml'), `data_dir: ${dataDir}\nlog_level: silent\nplugins:\n${plugins}`)
  return buildTestApp(loadConfig({ config: join(dir, 'config.yaml') }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
}

t.test('a plugin package installed beside config.yaml loads by name, with its options checked and defaulted', async (t) => {
  const dir = await projectDir(t)
  await installExample(dir, 'llamagate-plugin-greeting')
  const app = await start(dir, '  - path: llamagate-plugin-greeting\n    options: { greeting: Welcome }\n')
  t.teardown(() => app.close())
  t.same((await app.inject({ url: '/api/greeting?who=Ann' })).json(), { text: 'Welcome, Ann', models: 0 })
  // Its error class comes from the package's own copy of llamagate (dist/), the gateway runs the sources here:
  // still a 400 in the native shape, not a 500.
  const refused = await app.inject({ url: '/api/greeting?who=' })
  t.equal(refused.statusCode, 400)
  t.same(refused.json(), { error: 'who, when given, must not be empty' })
})

t.test('a plugin\'s own test runs on llamagate/testing: the gateway in its process, the plugin loaded by name', async (t) => {
  const dir = await projectDir(t)
  await installExample(dir, 'llamagate-plugin-greeting')
  const { code } = await transform(await readFile(EXAMPLE_TEST, 'utf8'), { loader: 'ts', format: 'esm' })
  await writeFile(join(dir, 'greeting.test.mjs'), code)
  // As its author runs it: a process of its own (no test loader), from the plugin's folder.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, LLAMAGATE_HOME: process.env.LLAMAGATE_HOME, LLAMAGATE_TEST_RUNTIME_BIN: process.env.LLAMAGATE_TEST_RUNTIME_BIN }
  const result = await promisify(execFile)(process.execPath, ['--test', 'greeting.test.mjs'], { cwd: dir, env: JSON.parse(JSON.stringify(env)) })
    .then(({ stdout }) => ({ code: 0, stdout }), (err: { code: number, stdout: string }) => err)
  t.equal(result.code, 0, result.stdout)
  t.match(result.stdout, /# pass 1\n# fail 0/)
})

t.test('a plugin package installed under <data_dir>/plugins loads by name', async (t) => {
  const dir = await projectDir(t)
  const dataDir = await tempDir(t)
  await installExample(join(dataDir, 'plugins'), 'llamagate-plugin-greeting')
  await symlink(PACKAGE_ROOT, join(dataDir, 'plugins', 'node_modules', 'llamagate'), 'dir')
  const app = await start(dir, '  - path: llamagate-plugin-greeting\n    options: { route: /api/hi }\n', dataDir)
  t.teardown(() => app.close())
  t.same((await app.inject({ url: '/api/hi' })).json(), { text: 'Hello, world', models: 0 }, 'the defaults filled in')
})

t.test('every load failure stops the start naming the plugin and why', async (t) => {
  const dir = await projectDir(t)
  await installExample(dir, 'llamagate-plugin-greeting')
  await installExample(dir, 'llamagate-plugin-throws', (code) => code.replace("name: 'greeting',", "name: 'thrower',")
    .replace('register (app, options) {', 'register (app, options) {\n    throw new Error(\'the audit log is not writable\')'))
  await installExample(dir, 'llamagate-plugin-breaks-at-import', (code) => `throw new Error('a missing native binding')\n${code}`)
  const cases: Array<[string, RegExp]> = [
    ['  - path: llamagate-plugin-greeting\n    options: { greeting: 5 }\n', /^plugin "greeting" \(llamagate-plugin-greeting\) could not be loaded: its options do not fit its schema: options\.greeting = 5 is not allowed: .*string.* \(config\.yaml plugins\[0\]\.options\)$/],
    ['  - path: llamagate-plugin-greeting\n    options: { greting: Hi }\n', /^plugin "greeting" \(llamagate-plugin-greeting\) could not be loaded: its options do not fit its schema: options\.greting is not a known key; allowed keys here: greeting, route/],
    ['  - path: llamagate-plugin-throws\n', /^plugin "thrower" \(llamagate-plugin-throws\) could not be loaded: it threw while registering: the audit log is not writable$/],
    ['  - path: llamagate-plugin-breaks-at-import\n', /^plugin "llamagate-plugin-breaks-at-import" could not be loaded: importing .*index\.js threw: a missing native binding$/],
    ['  - path: llamagate-plugin-nowhere\n', /^plugin "llamagate-plugin-nowhere" could not be loaded: no package of that name is installed beside config\.yaml \(.+\), in .+plugins, or beside llamagate \(.+\); install it in one of them/],
  ]
  for (const [plugins, message] of cases) {
    const err = await t.rejects(start(dir, plugins))
    t.type(err, PluginLoadError)
    t.match((err as Error).message, message)
  }
})

t.test('definePlugin: a Fastify plugin of its own; shared, its decorators reach the plugins after it, else not', async (t) => {
  const { default: Fastify } = await import('fastify')
  const { definePlugin, Type } = await import('../../core/platform/plugin-api.js')
  for (const shared of [true, false]) {
    const app = Fastify()
    t.teardown(() => app.close())
    const plugin = definePlugin({
      name: `counter-${shared}`,
      shared,
      options: Type.Object({ start: Type.Integer({ default: 0 }) }),
      register (app, options) { app.decorate('counter', options.start) },
    })
    t.equal(plugin.name, `counter-${shared}`)
    await app.register(plugin, { start: 7 })
    await app.ready()
    t.equal(app.hasDecorator('counter'), shared, shared ? 'shared: decorated for all' : 'its own: kept inside it')
  }
})

t.test('the published types are the entries and what they reach: no built-in plugin\'s service, one view of the app', async (t) => {
  const types = join(PACKAGE_ROOT, 'dist', 'types')
  const files = readdirSync(types, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.d.ts'))
  t.ok(files.some((file) => basename(file) === 'plugin-api.d.ts') && files.includes('plugin.d.ts') && files.includes('testing.d.ts'), 'the entries are there')
  t.same(files.filter((file) => file.startsWith('plugins') || file.startsWith('runtimes')), [], 'nothing of plugins/ or runtimes/')
  const augmenting = files.filter((file) => /^declare module 'fastify'/m.test(readFileSync(join(types, file), 'utf8')))
  t.same(augmenting.map((file) => basename(file)), ['gateway-decorators.d.ts'], 'Fastify\'s instance is widened in one place only')
})

// What a plugin calls but never builds: a command's `context.client`.
const CALLED_CLASSES = ['GatewayClient']

t.test('the published classes are errors and what a plugin calls: no built-in registry\'s class', async (t) => {
  const types = join(PACKAGE_ROOT, 'dist', 'types')
  const files = readdirSync(types, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.d.ts'))
  const parents = new Map<string, string | null>()
  for (const file of files) {
    for (const [, name, parent] of readFileSync(join(types, file), 'utf8').matchAll(/^export declare (?:abstract )?class (\w+)(?:<[^>]*>)?(?: extends (\w+))?/gm)) {
      parents.set(name!, parent ?? null)
    }
  }
  t.ok(parents.has('GatewayError'), `${parents.size} classes published`)
  const isError = (name: string | null): boolean => name === 'Error' || (name !== null && isError(parents.get(name) ?? null))
  const others = [...parents.keys()].filter((name) => !isError(name) && !CALLED_CLASSES.includes(name))
  t.same(others, [], 'no class a plugin neither throws, catches nor calls')
})
