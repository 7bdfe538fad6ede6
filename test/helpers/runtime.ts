import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { inspectBuild } from '../../runtimes/inspect-build.js'
import type { RuntimeBuild } from '../../runtimes/types.js'

let found: Promise<RuntimeBuild> | null = null

/**
 * The CPU llama-server the tests run, the one `llamagate/testing` lends a plugin's tests: `LLAMAGATE_TEST_RUNTIME_BIN`,
 * else the newest build made by llamagate under `$LLAMAGATE_HOME/runtimes` (~/.llamagate; `npm start` and `npm test`
 * build one first). No build is an error with the command that makes one, never a silent skip. Looked up once per process.
 */
export function cpuRuntime (): Promise<RuntimeBuild> {
  found ??= (async () => {
    const candidates: string[] = []
    if (process.env.LLAMAGATE_TEST_RUNTIME_BIN) candidates.push(process.env.LLAMAGATE_TEST_RUNTIME_BIN)
    const root = join(process.env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'runtimes')
    if (existsSync(root)) for (const v of readdirSync(root).sort().reverse()) candidates.push(join(root, v, 'cpu', 'bin'))
    const errors: string[] = []
    for (const dir of candidates) {
      const build = await inspectBuild(dir, 'built', 'cpu')
      if (!('error' in build)) return build
      errors.push(build.error)
    }
    throw new Error(`no usable CPU llama-server for the tests (${errors.join('; ') || `nothing under ${root}`}). Build one (about 6 minutes on 2 cores): npm run build && node dist/scripts/build/ensure-runtime.js, or npm run runtime:build -- --backend cpu; or point LLAMAGATE_TEST_RUNTIME_BIN at a folder holding llama-server`)
  })()
  return found
}
