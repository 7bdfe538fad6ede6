import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The suffix of a test file that runs in its folder's group (`cases.test.ts`) rather than in a process of its own. */
export const CASE_SUFFIX = '.case.ts'

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
  for (const file of caseFiles(dirname(fileURLToPath(groupUrl)))) await import(pathToFileURL(file).href)
}
