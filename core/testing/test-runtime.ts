import { existsSync, readdirSync } from 'node:fs'
import { symlink } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'

// The kit names where the CPU llama-server builds are; the gateway's own runtime registry (the llama-cpp plugin's)
// inspects them and chooses, as it does at every start, so that the core need not know how to run one.

/** How to get a build: every "no llama-server" of the kit ends with it. */
const HOW_TO_BUILD = 'Build one (about 6 minutes on 2 cores): npm run build && node dist/scripts/build/ensure-runtime.js, or npm run runtime:build -- --backend cpu; or point LLAMAGATE_TEST_RUNTIME_BIN at a folder holding llama-server'

/** Where `npm start`, `npm test` and `npm run runtime:build` install builds: `$LLAMAGATE_HOME/runtimes`, else ~/.llamagate's. */
function builtRuntimes (env: NodeJS.ProcessEnv): string {
  return join(env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'runtimes')
}

/**
 * Lends the test gateway's data folder the built runtimes (a link named `runtimes`, where the registry looks under
 * data_dir) and returns config.yaml's `runtimes` for `LLAMAGATE_TEST_RUNTIME_BIN`, which the registry tries first.
 * @throws when there is neither, with the command that builds one: never a silent skip
 */
export async function lendRuntimes (dataDir: string, env: NodeJS.ProcessEnv = process.env): Promise<Record<string, { bin: string }>> {
  const given = env.LLAMAGATE_TEST_RUNTIME_BIN
  const root = builtRuntimes(env)
  const built = existsSync(root) && readdirSync(root).some((v) => existsSync(join(root, v, 'cpu', 'bin', 'llama-server')))
  if (!given && !built) throw new Error(`no usable CPU llama-server for the tests (nothing under ${root}). ${HOW_TO_BUILD}`)
  if (built) await symlink(root, join(dataDir, 'runtimes'), 'dir')
  return given ? { cpu: { bin: given } } : {}
}

/** What GET /api/runtimes answers, as far as the kit reads it. */
export interface RuntimesAnswer { chosen: unknown, reason: string, rejected: Array<{ binDir: string, error: string }> }

/** The error of a gateway that found no CPU llama-server that runs among those lent, null when it found one. */
export function noRuntimeError (answer: RuntimesAnswer): Error | null {
  if (answer.chosen !== null) return null
  const why = [answer.reason, ...answer.rejected.map((r) => `${r.binDir}: ${r.error}`)].join('; ')
  return new Error(`no usable CPU llama-server for the tests (${why}). ${HOW_TO_BUILD}`)
}
