import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from '../helpers/app.js'
import { userEnv } from '../helpers/child-env.js'
// @ts-expect-error: a plain .mjs module shared by the build and the tests' loader, without types.
import { VENDORED, vendorFile } from '../../scripts/build/transpile.mjs'

// What a start loads (the built code, as a user runs it): a client command and a gateway built and ready load none
// of the packages only a later use needs (docs/benchmarks.md, "What a start loads"). A resolve hook (node:module's
// register) hears every ES module loaded, and require's cache holds every CommonJS one; a package counts as loaded when
// its entry module is (a runtime helper of one, such as Ajv's ucs2length in the built config validator, does not).

// A vendored package (scripts/build/transpile.mjs) loads as its one bundle in dist/vendor: the probe names it as well.
const BUNDLES = Object.fromEntries((VENDORED as string[]).map((name) => [vendorFile(name).replace(/^vendor\//, ''), name]))

const LATER = ['undici', 'ajv', '@huggingface/gguf', '@huggingface/tasks', '@huggingface/hub', 'ora', 'cli-progress', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler']

const HOOKS = `export function initialize ({ port }) { globalThis.port = port }
export async function resolve (specifier, context, next) { globalThis.port.postMessage(specifier); return next(specifier, context) }`

const PROBE = `
import { createRequire, register } from 'node:module'
import { MessageChannel } from 'node:worker_threads'
const [dist, dataDir, hooks, bundles] = process.argv.slice(1)
const bundleNames = JSON.parse(bundles)
const required = createRequire(import.meta.url)
const imported = new Set()
const { port1, port2 } = new MessageChannel()
port1.on('message', (specifier) => imported.add(specifier))
port1.unref()
register('data:text/javascript,' + encodeURIComponent(hooks), { data: { port: port2 }, transferList: [port2] })
// Bare names, as code imports a package; the entry files require loaded (a package's main).
const loaded = () => new Promise((resolve) => setImmediate(() => resolve([...new Set([
  ...[...imported].filter((s) => /^(@[^/]+[/])?[^./][^/:]*$/.test(s)),
  ...[...imported].flatMap((s) => { const file = /[/]vendor[/]([^/]+)$/.exec(s)?.[1]; return file && bundleNames[file] ? [bundleNames[file]] : [] }),
  ...Object.keys(required.cache).flatMap((file) => {
    const name = /node_modules[/]((?:@[^/]+[/])?[^/]+)[/]/.exec(file)?.[1]
    try { return name && required.resolve(name) === file ? [name] : [] } catch { return [] }
  }),
])])))
const sink = { write: () => true }
const { main } = await import(dist + '/core/cli/cli.js')
const code = await main(['list'], { stdout: sink, stderr: sink })
const afterList = await loaded()
const { loadConfig } = await import(dist + '/core/platform/config.js')
const { buildApp } = await import(dist + '/core/server/app.js')
const app = await buildApp(loadConfig({}, { LLAMAGATE_DATA_DIR: dataDir, LLAMAGATE_LOG_LEVEL: 'silent', LLAMAGATE_OLLAMA_LISTEN: 'off', LLAMAGATE_BUILD_GPU_RUNTIME: 'false' }))
await app.ready()
const afterServe = await loaded()
await app.close()
console.log(JSON.stringify({ code, afterList, afterServe }))
`

t.test('a client command and a ready gateway load none of what only a later use needs', async (t) => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', PROBE, join(PACKAGE_ROOT, 'dist'), await tempDir(t), HOOKS, JSON.stringify(BUNDLES)],
    { env: userEnv({ LLAMAGATE_HOST: 'http://127.0.0.1:9' }) })
  const { code, afterList, afterServe } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { code: number, afterList: string[], afterServe: string[] }
  t.equal(code, 1, 'list ran (and found no server)')
  t.ok(afterServe.includes('fastify') && afterServe.includes('prom-client') && afterServe.includes('typebox') && afterList.includes('yaml'), `the probe sees what a start does load: ${afterServe.join(', ')}`)
  t.same(afterList.filter((p) => LATER.includes(p)), [], 'llamagate list')
  t.same(afterServe.filter((p) => LATER.includes(p)), [], 'a gateway built and ready')
})
