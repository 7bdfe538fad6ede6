import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { childEnv } from './child-env.js'

/** Runs the built `npm run bench` script with `args` and the config at `config`; its exit code and all it printed. */
export async function runBench (args: string[], config: string): Promise<{ code: number | null, output: string }> {
  const bench = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/bench/bench.js'), ...args], { env: childEnv({ LLAMAGATE_CONFIG: config }), stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  bench.stdout.on('data', (d) => { output += d })
  bench.stderr.on('data', (d) => { output += d })
  const code = await new Promise<number | null>((resolve) => bench.once('close', resolve))
  return { code, output }
}
