import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { caseFiles } from '../helpers/cases.js'

// The house's floors, read from the code's own imports so that they cannot come back unseen: core/ is the ground
// floor and imports nothing from plugins/ or runtimes/ (the plugins hand it what it needs through plugins/builtin.json
// and their manifests); and no file reaches itself again through its imports.

const FLOORS = ['core', 'plugins', 'runtimes', 'scripts']

function sources (dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

/** Every relative import of a file (static, type-only, re-exports and import() of a string), as the file it names. */
function importsOf (file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
  return importedFiles.map((i) => i.fileName).filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name).replace(/\.js$/, '.ts'))
}

const files = FLOORS.flatMap((floor) => sources(join(PACKAGE_ROOT, floor)))
const graph = new Map(files.map((file) => [file, importsOf(file)]))
const rel = (file: string): string => relative(PACKAGE_ROOT, file)

t.test('core/ imports nothing from plugins/ or runtimes/', async (t) => {
  t.ok(files.some((f) => rel(f).startsWith('core/')), 'core has files to check')
  const upward = [...graph].flatMap(([file, imports]) => rel(file).startsWith('core/')
    ? imports.filter((i) => /^(plugins|runtimes)\//.test(rel(i))).map((i) => `${rel(file)} -> ${rel(i)}`)
    : [])
  t.same(upward, [], 'no import from core/ reaches up')
})

// core/'s wings, from the top down: a wing imports only the wings below it (the test kit starts the whole server,
// and nothing but a plugin's tests imports it).
const WINGS = ['testing', 'cli', 'server', 'platform', 'config', 'base']
const wingOf = (file: string): number => WINGS.indexOf(rel(file).split('/')[1] ?? '')

t.test('core/ is in its wings, and no wing imports one above it', async (t) => {
  const core = files.filter((f) => rel(f).startsWith('core/'))
  t.same(core.filter((f) => wingOf(f) === -1).map(rel), [], 'every file of core/ is in a wing')
  const upward = core.flatMap((file) => (graph.get(file) ?? [])
    .filter((i) => rel(i).startsWith('core/') && wingOf(i) < wingOf(file))
    .map((i) => `${rel(file)} -> ${rel(i)}`))
  t.same(upward, [], 'no import from a wing reaches a wing above it')
  // The check itself: the platform reaching into the CLI is what it must catch.
  const probe = join(PACKAGE_ROOT, 'core', 'platform', 'probe.ts')
  t.ok(wingOf(join(PACKAGE_ROOT, 'core', 'cli', 'cli.ts')) < wingOf(probe), 'cli stands above platform')
})

t.test('no import circles', async (t) => {
  const circles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    stack.push(file)
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue
      if (state.get(next) === 'open') circles.push([...stack.slice(stack.indexOf(next)), next].map(rel).join(' -> '))
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  t.same(circles, [], 'every import path ends')
})

t.test('the checker sees what it is meant to see', async (t) => {
  // A file that names its imports in each way the checker must read.
  const probe = join(PACKAGE_ROOT, 'core', 'probe.ts')
  const text = "import a from '../plugins/x/a.js'\nimport type { B } from '../runtimes/b.js'\nexport * from './c.js'\nconst d = await import('../plugins/d.js')\n"
  const { importedFiles } = ts.preProcessFile(text, true, true)
  t.same(importedFiles.map((i) => resolve(dirname(probe), i.fileName)).map(rel), ['plugins/x/a.js', 'runtimes/b.js', 'core/c.js', 'plugins/d.js'])
})

t.test('every *.case.ts runs: its folder has a cases.test.ts that runs the folder\'s cases', async (t) => {
  const folders = (dir: string): string[] => [dir, ...readdirSync(dir).map((n) => join(dir, n)).filter((p) => statSync(p).isDirectory()).flatMap(folders)]
  const withCases = folders(join(PACKAGE_ROOT, 'test')).filter((dir) => caseFiles(dir).length > 0)
  t.ok(withCases.length > 1, `${withCases.length} folders hold cases`)
  const unrun = withCases.filter((dir) => {
    try { return !readFileSync(join(dir, 'cases.test.ts'), 'utf8').includes('await runCases(import.meta.url)') } catch { return true }
  })
  t.same(unrun.map(rel), [], 'no folder\'s cases are left out of the run')
})
