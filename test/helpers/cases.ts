import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { cpuSeconds } from '../loader/cpu-time.mjs'
import { watchLinger } from './linger-report.js'

/** The suffix of a test file that runs in its folder's group (`cases.test.ts`) rather than in a process of its own. */
export const CASE_SUFFIX = '.case.ts'

/** Where each group writes how long its case files' tests took, for `npm test`'s list of the slowest files. */
export const CASE_TIMES_DIR = join('.tap', 'case-times')

/** The `*.case.ts` files of a folder, in name order. */
export function caseFiles (dir: string): string[] {
  return readdirSync(dir).filter((name) => name.endsWith(CASE_SUFFIX)).sort().map((name) => join(dir, name))
}

/**
 * Runs every `*.case.ts` file of the folder of `groupUrl` (a `cases.test.ts`) in this one process, one after the
 * other: each is a test file like any other (`npx tap test/x/y.case.ts` runs it alone), but a process of its own
 * costs ~3 s of CPU (tap, the loader, the gateway's modules) where its tests take a few. Each file's tests join the
 * root in order, so they run after those of the files before it. A file that needs a process of its own (it changes
 * process-wide state, or spawns gateways and counts processes) stays a `*.test.ts`.
 */
export async function runCases (groupUrl: string): Promise<void> {
  const group = fileURLToPath(groupUrl)
  const timing = timeCases(group)
  const imported = watchLinger()
  for (const file of caseFiles(dirname(group))) {
    timing.current = relative(PACKAGE_ROOT, file)
    await import(pathToFileURL(file).href)
  }
  imported()
}

/**
 * Adds up, per case file, the time of the top-level tests it declared (a test is the file's that was being imported
 * when it was declared), and writes them to `.tap/case-times` when the group's process ends.
 */
function timeCases (group: string): { current: string } {
  const state = { current: '' }
  const owner = new WeakMap<object, string>()
  const totals = new Map<string, number>()
  // CPU seconds too (the process's and its reaped children's): on two cores, what a file costs the others.
  const cpu = new Map<string, number>()
  const cpuAtStart = new WeakMap<object, number>()
  t.on('subtestAdd', (test: object) => { owner.set(test, state.current) })
  t.on('subtestStart', (test: object) => { cpuAtStart.set(test, cpuSeconds() ?? 0) })
  t.on('subtestEnd', (test: { time?: number }) => {
    const file = owner.get(test)
    if (file === undefined) return
    totals.set(file, (totals.get(file) ?? 0) + (test.time ?? 0) / 1000)
    const start = cpuAtStart.get(test)
    if (start !== undefined) cpu.set(file, (cpu.get(file) ?? 0) + (cpuSeconds() ?? 0) - start)
  })
  const started = Date.now()
  process.once('exit', () => {
    const dir = join(PACKAGE_ROOT, CASE_TIMES_DIR)
    mkdirSync(dir, { recursive: true })
    const name = relative(PACKAGE_ROOT, group)
    writeFileSync(join(dir, `${name.replaceAll('/', '_')}.json`), JSON.stringify({ group: name, started, files: Object.fromEntries(totals), cpu: Object.fromEntries(cpu) }))
  })
  return state
}
