import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

// docs/architecture.md is the map of the house: it cannot drift from the tree without this failing, either way. Every
// plugin plugins/builtin.json registers has its line in "The plugins, in order", in that order; every folder of
// plugins/, runtimes/ and scripts/ is named; every folder the map names exists; and every source path README.md and
// docs/ name (`plugins/inference/images.ts`, or short from a floor: `inference/images.ts`, `helpers/cases.ts`) is a
// file that exists.

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

const isDir = (path: string): boolean => {
  try { return statSync(join(PACKAGE_ROOT, path)).isDirectory() } catch { return false }
}
const foldersOf = (floor: string): string[] => readdirSync(join(PACKAGE_ROOT, floor)).filter((name) => isDir(join(floor, name)))

t.test('every folder of runtimes/ and scripts/ is named in the map', async (t) => {
  for (const floor of ['runtimes', 'scripts']) {
    const folders = foldersOf(floor)
    t.ok(folders.length > 2, `${floor}/ has ${folders.length} folders`)
    t.same(folders.filter((name) => !architecture.includes(`${floor}/${name}/`)), [], `each named as ${floor}/<folder>/`)
  }
})

t.test('every folder of plugins/ is named in the map, registered or not', async (t) => {
  const folders = foldersOf('plugins')
  t.ok(folders.length > 10, `plugins/ has ${folders.length} folders`)
  // Its line in "The plugins, in order" names it; a plugin the list leaves out is named by its path.
  const lines = section('The plugins, in order')
  const named = (name: string): boolean => lines.some((l) => new RegExp(`^\\s+${name}\\s`).test(l)) ||
    new RegExp(`plugins/${name}(?![\\w-])`).test(architecture)
  t.same(folders.filter((name) => !named(name)), [], 'each has its line, or is named as plugins/<folder>')
})

/**
 * The folders the map names by a path from a floor: `runtimes/build/`, `plugins/web-ui/page/`, `**plugins/upstreams**`.
 * A path without a slash at its end may name a file without its extension (`core/config`, as the request's path
 * draws it), so it counts as a folder only when no such file is there.
 */
function namedFolders (text: string): string[] {
  const folders = new Set<string>()
  for (const [path] of text.matchAll(/\b(?:core|plugins|runtimes|scripts|test)(?:\/[a-z0-9_-]+)*\/(?![\w.-])/g)) folders.add(path)
  for (const [path] of text.matchAll(/\b(?:core|plugins|runtimes|scripts|test)(?:\/[a-z0-9_-]+)+(?![\w./-])/g)) {
    try { if (statSync(join(PACKAGE_ROOT, `${path}.ts`)).isFile()) continue } catch {}
    folders.add(`${path}/`)
  }
  return [...folders]
}

t.test('every folder the map names exists', async (t) => {
  const folders = namedFolders(architecture)
  t.ok(folders.length > 20, `${folders.length} folders named`)
  t.same(folders.filter((path) => !isDir(path)), [], 'none names a folder that is not there')
  // The check itself: a folder that went, a file named without its extension, a file.
  t.same(namedFolders('`runtimes/upstream/`, **plugins/gone**: core/base/errors, plugins/scheduler/scheduler.ts'), ['runtimes/upstream/', 'plugins/gone/'])
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
