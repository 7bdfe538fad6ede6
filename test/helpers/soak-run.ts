import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from './app.js'

/** Runs the built soak with `args` to its end: its exit code, what it printed, and its JSON ledger. */
export async function runSoak (t: Test, args: string[]): Promise<{ code: number | null, output: string, report: any }> {
  const out = join(await tempDir(t), 'soak.json')
  const soak = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/soak/soak.js'), ...args, '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  soak.stdout.on('data', (d) => { output += d })
  soak.stderr.on('data', (d) => { output += d })
  const code = await new Promise<number | null>((resolve) => soak.once('close', resolve))
  return { code, output, report: code === null ? null : JSON.parse(await readFile(out, 'utf8').catch(() => 'null')) }
}
