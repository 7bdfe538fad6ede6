import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildApp, type BuildOptions } from '../../core/server/app.js'
import { lazyCompilers } from '../../core/server/lazy-compilers.js'
import { resolveConfig, type Config } from '../../core/platform/config.js'
import { holdsOllamaPort } from './ollama-port.js'

type Test = { teardown: (fn: () => unknown) => void }

/** A fresh temporary folder, removed when the test ends. */
export async function tempDir (t: Test, prefix = 'llamagate-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A config as a test wants it: a temporary data folder (so models and state never leak between tests),
 * silent logs, llama-server on one thread (`default_options.num_thread: 1`: its default, one spinning thread
 * per core, leaves a 2-core machine nothing for the gateway and the test; a test about threads unsets it with
 * `num_thread: undefined`), no background GPU runtime build (on a machine with a GPU and its toolkit every
 * listening app would start minutes of compiling; the tests of that build turn it on), no second address for Ollama's
 * clients (`auto` would take 127.0.0.1:11434 in every app the suite's parallel processes build: a test gives its own,
 * `127.0.0.1:0`, or `auto` inside holdOllamaPort), and the given raw config keys on top (the same keys as config.yaml). Resolved from
 * these layers alone: no config file and no environment variable of the caller's counts. `configFile`: the
 * config.yaml these values stand for (plugins installed beside it are found by name), not read.
 */
export async function testConfig (t: Test, values: Record<string, unknown> = {}, configFile: string | null = null): Promise<Config> {
  const dataDir = await tempDir(t)
  const defaultOptions = defined({ num_thread: 1, ...(values.default_options as object) })
  return resolveConfig([{ source: 'test', values: { data_dir: dataDir, log_level: 'silent', build_gpu_runtime: false, ollama_listen: 'off', ...values, default_options: defaultOptions } }], configFile)
}

/** The keys whose value is not undefined (so that a test can unset a default by naming it undefined). */
function defined (values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined))
}

/**
 * One validator compiler for every app this test process builds: Ajv compiles each route's schema once per
 * process (the schemas are the same objects in every app), not once per app, which cost 0.4 s of CPU an app.
 */
const SCHEMAS: BuildOptions['schemaController'] = { compilersFactory: lazyCompilers() }

/**
 * buildApp as the tests call it: with the process's shared validator compiler. Refuses `ollama_listen: auto` (a
 * config read from a file without the key has it) outside holdOllamaPort: the suite's processes would race for the
 * real port 127.0.0.1:11434.
 */
export function buildTestApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  if (config.ollamaListen?.required === false && !holdsOllamaPort()) {
    throw new Error('this test\'s app would take Ollama\'s port 127.0.0.1:11434 (ollama_listen: auto): set ollama_listen (off, 127.0.0.1:0) or hold the port (test/helpers/ollama-port.ts)')
  }
  return buildApp(config, { schemaController: SCHEMAS, ...options })
}

/** The whole app on a temporary data folder, closed when the test ends. Drive it with `app.inject`. */
export async function build (t: Test, values: Record<string, unknown> = {}): Promise<FastifyInstance> {
  const app = await buildTestApp(await testConfig(t, values))
  t.teardown(() => app.close())
  return app
}
