import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../core/paths.js'

/**
 * The ten slowest test files of the last tap run, with seconds: so that a suite that grows slow shows where.
 * `npm test` runs it once tap is done, and then exits with tap's code. It reads tap's process records under
 * `.tap/processinfo` (one per process: a test file's has its path as `externalID` and its whole run, the
 * TypeScript loading included, as `runtime` in ms) and prints to stderr. `node slowest-tests.js [ROOT]` reads
 * ROOT/.tap instead of the project's.
 *
 * It exits 0 whatever it finds: a run's outcome is tap's to say.
 */

/** How many files are listed. */
const COUNT = 10

interface ProcessRecord { externalID?: string, parent?: string | null, runtime?: number }

/** The test files of the last run, slowest first, each with its run in seconds. */
async function slowestTests (root: string, count: number): Promise<Array<{ file: string, seconds: number }>> {
  const dir = join(root, '.tap', 'processinfo')
  const files: Array<{ file: string, seconds: number }> = []
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(await readFile(join(dir, name), 'utf8')) as ProcessRecord
    // A process a test started (a CLI, a second gateway) has the test's process as parent; tap's own have no file.
    if (record.parent || record.externalID === undefined || typeof record.runtime !== 'number') continue
    files.push({ file: record.externalID, seconds: record.runtime / 1000 })
  }
  return files.sort((a, b) => b.seconds - a.seconds).slice(0, count)
}

async function main (): Promise<void> {
  const slowest = await slowestTests(process.argv[2] ?? PACKAGE_ROOT, COUNT)
  if (slowest.length === 0) return
  const lines = slowest.map(({ file, seconds }) => `${seconds.toFixed(1).padStart(7)} s  ${file}`)
  process.stderr.write(`\nthe ${slowest.length} slowest test files (whole process, seconds):\n${lines.join('\n')}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`slowest-tests: could not read tap's records: ${(err as Error).message}\n`)
})
