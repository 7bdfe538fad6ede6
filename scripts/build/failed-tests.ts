import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * The failed assertions of the last tap run, each with the subtests it sits in and the start of its diagnostics,
 * printed last by `npm test`: a CI log that keeps only its tail (the coverage table and the slowest files come
 * before) still names what failed. It reads tap's per-file results under `.tap/test-results` written since
 * `--since MS` (the run's start: files not run this time keep an older result). `node failed-tests.js [ROOT]
 * [--since MS]`.
 *
 * It exits 0 whatever it finds: a run's outcome is tap's to say.
 */

/** Diagnostic lines kept per failure: the diff or the thrown error's start, not a whole stack. */
const DIAG_LINES = 20
/** Failures listed in all: past this, a count. */
const MAX_FAILURES = 20

interface Failure { file: string, path: string[], diag: string[] }

async function resultFiles (dir: string, since: number): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  const files: string[] = []
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.tap')) continue
    const file = join(entry.parentPath, entry.name)
    if ((await stat(file)).mtimeMs >= since) files.push(file)
  }
  return files.sort()
}

/**
 * The failures of one TAP stream: each `not ok` with no failing child under it (a parent fails because a child did:
 * the child is the news), named by the subtests around it.
 */
export function failuresOf (file: string, tap: string): Failure[] {
  const lines = tap.split('\n')
  const failures: Failure[] = []
  const open: Array<{ indent: number, name: string }> = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line)
    if (subtest) {
      const indent = subtest[1]!.length
      while (open.length > 0 && open[open.length - 1]!.indent >= indent) open.pop()
      open.push({ indent, name: subtest[2]! })
      continue
    }
    const result = /^(\s*)(not )?ok \d+ - (.*?)(?: # (?:time=.*|TODO.*|SKIP.*))?$/.exec(line)
    if (!result) continue
    const indent = result[1]!.length
    while (open.length > 0 && open[open.length - 1]!.indent > indent) open.pop()
    const closesSubtest = open.length > 0 && open[open.length - 1]!.indent === indent && open[open.length - 1]!.name === result[3]
    if (closesSubtest) open.pop()
    if (result[2] === undefined || /# TODO/.test(line)) continue
    // A subtest whose child failed is already listed through that child.
    const last = failures[failures.length - 1]
    if (closesSubtest && last !== undefined && last.file === file && last.path.length > open.length + 1 &&
      last.path[open.length] === result[3]) continue
    const diag: string[] = []
    if (lines[i + 1]?.trim() === '---') {
      for (let j = i + 2; j < lines.length && lines[j]!.trim() !== '...'; j++) diag.push(lines[j]!.slice(indent + 2))
    }
    failures.push({ file, path: [...open.map((o) => o.name), result[3]!], diag })
  }
  return failures
}

/** A name past 300 characters (an assertion's message may carry a whole stderr) is cut. */
function clip (name: string): string {
  return name.length > 300 ? `${name.slice(0, 300)}…` : name
}

async function main (): Promise<void> {
  const args = process.argv.slice(2)
  const sinceAt = args.indexOf('--since')
  const since = sinceAt >= 0 ? Number(args.splice(sinceAt, 2)[1]) : 0
  const root = args[0] ?? PACKAGE_ROOT
  const dir = join(root, '.tap', 'test-results')
  const failures: Failure[] = []
  for (const file of await resultFiles(dir, Number.isFinite(since) ? since : 0)) {
    failures.push(...failuresOf(relative(dir, file).replace(/\.tap$/, ''), await readFile(file, 'utf8')))
  }
  if (failures.length === 0) return
  let out = `\nthe ${failures.length} failed test${failures.length === 1 ? '' : 's'} of this run:\n`
  for (const failure of failures.slice(0, MAX_FAILURES)) {
    out += `\n  ${failure.file}\n${failure.path.map((name, depth) => `${'  '.repeat(depth + 2)}${clip(name)}`).join('\n')}\n`
    const diag = failure.diag.slice(0, DIAG_LINES)
    if (diag.length > 0) out += diag.map((l) => `      | ${l}`).join('\n') + '\n'
    if (failure.diag.length > DIAG_LINES) out += `      | … ${failure.diag.length - DIAG_LINES} lines more in .tap/test-results\n`
  }
  if (failures.length > MAX_FAILURES) out += `\n  … and ${failures.length - MAX_FAILURES} more\n`
  process.stderr.write(out)
}

if (process.argv[1] !== undefined && /failed-tests\.[jt]s$/.test(process.argv[1])) {
  main().catch((err: unknown) => {
    process.stderr.write(`failed-tests: could not read tap's results: ${(err as Error).message}\n`)
  })
}
