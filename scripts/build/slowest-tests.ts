import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * The ten slowest test processes of the last tap run, and the ten slowest case files inside them, with seconds: so
 * that a suite that grows slow shows where. `npm test` runs it once tap is done, and then exits with tap's code. It
 * reads tap's process records under `.tap/processinfo` (one per process: a test file's has its path as
 * `externalID` and its whole run, the TypeScript loading included, as `runtime` in ms) and what each group of case
 * files wrote under `.tap/case-times` (test/helpers/cases.ts), and prints to stderr. `node slowest-tests.js [ROOT]`
 * reads ROOT/.tap instead of the project's.
 *
 * It exits 0 whatever it finds: a run's outcome is tap's to say.
 */

/** How many of each are listed. */
const COUNT = 10

interface ProcessRecord { externalID?: string, parent?: string | null, runtime?: number, date?: string }
interface CaseTimes { group: string, started: number, files: Record<string, number>, cpu?: Record<string, number> }
interface CpuRecord { file?: string, seconds?: number, ended?: number }
interface Timed { file: string, seconds: number }

/** The test files that ran in a process of their own in the last run, each with its start and its run in seconds. */
async function testProcesses (root: string): Promise<Array<Timed & { started: number }>> {
  const dir = join(root, '.tap', 'processinfo')
  const files: Array<Timed & { started: number }> = []
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(await readFile(join(dir, name), 'utf8')) as ProcessRecord
    // A process a test started (a CLI, a second gateway) has the test's process as parent; tap's own have no file.
    if (record.parent || record.externalID === undefined || typeof record.runtime !== 'number') continue
    files.push({ file: record.externalID, seconds: record.runtime / 1000, started: Date.parse(record.date ?? '') || 0 })
  }
  return files
}

/** The case files of the groups that ran in the last run: a group's record older than its process is a run before. */
async function caseFiles (root: string, processes: Array<{ file: string, started: number }>): Promise<{ wall: Timed[], cpu: Timed[] }> {
  const dir = join(root, '.tap', 'case-times')
  const names = await readdir(dir).catch(() => [] as string[])
  const started = new Map(processes.map((p) => [p.file, p.started]))
  const wall: Timed[] = []
  const cpu: Timed[] = []
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(await readFile(join(dir, name), 'utf8')) as CaseTimes
    const groupStart = started.get(record.group)
    if (groupStart === undefined || record.started < groupStart) continue
    wall.push(...Object.entries(record.files).map(([file, seconds]) => ({ file, seconds })))
    cpu.push(...Object.entries(record.cpu ?? {}).map(([file, seconds]) => ({ file, seconds })))
  }
  return { wall, cpu }
}

/**
 * The CPU seconds of each test process of the last run, its reaped children's included (test/loader/cpu-time.mjs
 * writes them): a record that ended before its process started is a run before.
 */
async function cpuTimes (root: string, processes: Array<{ file: string, started: number }>): Promise<Timed[]> {
  const dir = join(root, '.tap', 'cpu-times')
  const names = await readdir(dir).catch(() => [] as string[])
  const started = new Map(processes.map((p) => [p.file, p.started]))
  const files: Timed[] = []
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(await readFile(join(dir, name), 'utf8')) as CpuRecord
    const start = started.get(record.file ?? '')
    if (start === undefined || typeof record.seconds !== 'number' || (record.ended ?? 0) < start) continue
    files.push({ file: record.file!, seconds: record.seconds })
  }
  return files
}

/** The slowest `rows`, slowest first, under "the N slowest <what>:". */
function listing (what: string, rows: Timed[]): string {
  const lines = rows.sort((a, b) => b.seconds - a.seconds).slice(0, COUNT).map(({ file, seconds }) => `${seconds.toFixed(1).padStart(7)} s  ${file}`)
  return `\nthe ${lines.length} slowest ${what}:\n${lines.join('\n')}\n`
}

async function main (): Promise<void> {
  const root = process.argv[2] ?? PACKAGE_ROOT
  const processes = await testProcesses(root)
  if (processes.length === 0) return
  let out = listing('test files (whole process, seconds)', processes)
  const cases = await caseFiles(root, processes)
  if (cases.wall.length > 0) out += listing('case files (their tests in their group\'s process, seconds)', cases.wall)
  const cpu = await cpuTimes(root, processes)
  if (cpu.length > 0) {
    const total = cpu.reduce((sum, f) => sum + f.seconds, 0)
    out += listing(`test files by CPU (theirs and their children's, CPU seconds; ${Math.round(total)} in all)`, cpu)
  }
  if (cases.cpu.length > 0) out += listing('case files by CPU (CPU seconds)', cases.cpu)
  process.stderr.write(out)
}

main().catch((err: unknown) => {
  process.stderr.write(`slowest-tests: could not read tap's records: ${(err as Error).message}\n`)
})
