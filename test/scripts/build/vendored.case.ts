import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
// @ts-expect-error: a plain .mjs module shared by the build and the tests' loader, without types.
import { VENDORED, vendorFile } from '../../../scripts/build/transpile.mjs'

// The dependencies bundled into dist/vendor (scripts/build/transpile.mjs): dist/ must load each as its one bundle, never
// as the package's hundreds of modules, and each bundle must work as the package does.

const names = VENDORED as string[]
const dist = join(PACKAGE_ROOT, 'dist')

async function * scripts (dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory() && entry.name !== 'vendor' && entry.name !== 'web-ui') yield * scripts(path)
    else if (entry.name.endsWith('.js')) yield path
  }
}

t.test('no file of dist/ imports a vendored package by its name', async (t) => {
  const byName = new RegExp(`(from |import\\()["'](${names.join('|')})["']`)
  let files = 0
  const offenders: string[] = []
  for await (const file of scripts(dist)) {
    files++
    if (byName.test(await readFile(file, 'utf8'))) offenders.push(relative(dist, file))
  }
  t.ok(files > 100, `${files} files read`)
  t.same(offenders, [], 'each imports dist/vendor instead')
  const schema = await readFile(join(dist, 'core/config/config-schema.js'), 'utf8')
  t.match(schema, 'from "../../vendor/typebox.js"', 'a rewritten import names the bundle relative to the file')
})

t.test('each bundle works as its package: TypeBox builds and checks a schema, execa runs a process, the hub client and the GGUF reader are there', async (t) => {
  const load = async (name: string): Promise<Record<string, any>> => import(pathToFileURL(join(dist, vendorFile(name))).href)
  const { Type } = await load('typebox')
  t.same(Type.Object({ a: Type.String() }).required, ['a'], 'TypeBox')
  const { Value } = await load('typebox/value')
  t.equal(Value.Check(Type.Object({ a: Type.String() }), { a: 'x' }), true, 'TypeBox\'s Value checks a schema the other bundle built')
  t.equal(Value.Check(Type.Object({ a: Type.String() }), { a: 1 }), false)
  const { execa } = await load('execa')
  // cross-spawn inside is CommonJS: the bundle's require must reach node's own modules.
  t.equal((await execa(process.execPath, ['-e', 'process.stdout.write("ran")'])).stdout, 'ran', 'execa')
  const hub = await load('@huggingface/hub')
  t.equal(typeof hub.listFiles, 'function', 'the hub client')
  t.equal(typeof hub.modelInfo, 'function')
  const gguf = await load('@huggingface/gguf')
  t.equal(typeof gguf.gguf, 'function', 'the GGUF reader')
  t.equal(gguf.GGMLFileQuantizationType.Q4_K_M, 15, 'with the file types\' names the model list shows')
})

t.test('the tests\' loader gives the sources the same bundles', async (t) => {
  for (const name of names) t.equal(import.meta.resolve(name), pathToFileURL(join(dist, vendorFile(name))).href, name)
})
