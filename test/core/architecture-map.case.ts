import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/paths.js'

// docs/architecture.md is the map of the house: it cannot drift from the tree without this failing. Every plugin
// plugins/builtin.json registers has its line in "The plugins, in order", in that order; every folder of runtimes/
// is named; and every source path README.md and docs/ name (`plugins/inference/images.ts`, or short from a floor:
// `inference/images.ts`, `helpers/cases.ts`) is a file that exists.

const read = (path: string): string => readFileSync(join(PACKAGE_ROOT, path), 'utf8')
const architecture = read('docs/architecture.md')

/** The lines of a `## ` section of docs/architecture.md whose heading starts with `heading`. */
function section (heading: string): string[] {
  const lines = architecture.split('\n')
  const start = lines.findIndex((l) => l.startsWith(`## ${heading}`))
  if (start === -1) return []
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '))
  return lines.slice(start + 1, end === -1 ? undefined : end)
}

t.test('every plugin of plugins/builtin.json has its line in the map, in registration order', async (t) => {
  const builtin = (JSON.parse(read('plugins/builtin.json')) as { plugins: Array<{ name: string }> }).plugins.map((p) => p.name)
  t.ok(builtin.length > 10, `${builtin.length} plugins registered`)
  const lines = section('The plugins, in order')
  t.ok(lines.length > 0, 'docs/architecture.md has "## The plugins, in order"')
  // A plugin's line starts with its name, as `   storage        → app.store ...`.
  const lineOf = (name: string): number => lines.findIndex((l) => new RegExp(`^\\s+${name}\\s`).test(l))
  const missing = builtin.filter((name) => lineOf(name) === -1)
  t.same(missing, [], 'each has a line of its own')
  const listed = builtin.filter((name) => lineOf(name) !== -1).sort((a, b) => lineOf(a) - lineOf(b))
  t.same(listed, builtin.filter((name) => lineOf(name) !== -1), 'in the order builtin.json registers them')
})

t.test('every folder of runtimes/ is named in the map', async (t) => {
  const folders = readdirSync(join(PACKAGE_ROOT, 'runtimes')).filter((name) => statSync(join(PACKAGE_ROOT, 'runtimes', name)).isDirectory())
  t.ok(folders.length > 2, `runtimes/ has ${folders.length} folders`)
  t.same(folders.filter((name) => !architecture.includes(`runtimes/${name}/`)), [], 'each named as runtimes/<folder>/')
})

/** README.md and every Markdown file under docs/. */
function docs (dir = 'docs'): string[] {
  return readdirSync(join(PACKAGE_ROOT, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(PACKAGE_ROOT, path)).isDirectory()) return docs(path)
    return name.endsWith('.md') ? [path] : []
  })
}

// Where a short path may start: the repository, or a floor (`inference/images.ts` is plugins/inference/images.ts).
const ROOTS = ['', 'core', 'plugins', 'runtimes', 'scripts', 'test']
const exists = (path: string): boolean => ROOTS.some((root) => {
  try { return statSync(join(PACKAGE_ROOT, root, path)).isFile() } catch { return false }
})

t.test('every source path README.md and docs/ name exists', async (t) => {
  const files = ['README.md', ...docs()]
  let named = 0
  const stale: string[] = []
  for (const file of files) {
    read(file).split('\n').forEach((line, i) => {
      for (const [path] of line.matchAll(/[a-z0-9-]+\/[a-z0-9./-]+\.ts\b/g)) {
        named++
        if (!exists(path)) stale.push(`${relative('.', file)}:${i + 1} ${path}`)
      }
    })
  }
  t.ok(named > 50, `${named} paths named in ${files.length} files`)
  t.same(stale, [], 'none names a file that is not there')
})
