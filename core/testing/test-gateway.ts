/**
 * `llamagate/testing`: a plugin's own tests start the whole gateway in their process, on a real socket, with the
 * real CPU llama-server and tiny random-weight models, and their plugin loaded through config.yaml's `plugins:` as an
 * admin would load it (so its options are checked and its load failures named the same way).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../server/app.js'
import { resolveConfigAndPlugins } from '../platform/plugin-manifests.js'
import { lendRuntimes, noRuntimeError, type RuntimesAnswer } from './test-runtime.js'
import { writeTinyGguf } from './tiny-gguf.js'

export interface TestGatewayOptions {
  /**
   * config.yaml's `plugins:` entries: `path` a package name (resolved from `cwd`, as beside config.yaml) or an
   * absolute path to the plugin's built module.
   */
  plugins?: Array<{ path: string, options?: Record<string, unknown> }>
  /** Tiny models to import, by name (`owner/name`), each its own random weights. @default ['test/tiny'] */
  models?: string[]
  /** More config.yaml keys, as written there (`limits`, `auth`, `default_options`...). */
  config?: Record<string, unknown>
  /** Where package names are resolved from: the folder config.yaml would be in. @default process.cwd() */
  cwd?: string
}

export interface TestGateway {
  /** The running gateway (`app.inject` works too). */
  app: FastifyInstance
  /** `http://127.0.0.1:<port>`: every surface (/api, /v1, Anthropic's /v1/messages) answers there. */
  url: string
  /** Closes the gateway, stops its llama-servers and deletes its temporary folder. */
  close(): Promise<void>
}

/**
 * Starts a gateway for a test: a temporary data folder, silent logs, llama-server on one thread (on a small machine
 * its default threads spin on every core), tiny models of a few hundred KB, an address of its own.
 * Close it when the test ends (`t.teardown(gateway.close)`).
 * @throws when no CPU llama-server is built (the message says how to build one), or a plugin does not load
 */
export async function startTestGateway (options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-testing-'))
  // The runtimes lent are a link: removing the folder removes the link, not the builds.
  const cleanup = (): Promise<void> => rm(dir, { recursive: true, force: true })
  let app: FastifyInstance | undefined
  try {
    const runtimes = await lendRuntimes(dir)
    const given = options.config ?? {}
    // With the sections of the plugins' manifests, as `serve` reads config.yaml.
    const { config } = await resolveConfigAndPlugins(() => ({ configFile: join(options.cwd ?? process.cwd(), 'config.yaml'), layers: [{
      source: 'llamagate/testing',
      values: {
        log_level: 'silent',
        build_gpu_runtime: false,
        ollama_listen: 'off',
        ...given,
        data_dir: dir,
        runtime: 'cpu',
        runtimes,
        plugins: options.plugins ?? [],
        default_options: { num_thread: 1, num_ctx: 512, max_tokens: 32, ...(given.default_options as object | undefined) },
      },
    // Package names resolve from beside config.yaml: the test's own folder stands for it.
    }] }))
    app = await buildApp(config)
    // What only the built-in plugins know, the kit asks the gateway as a client would: which build it chose, and
    // to import the models.
    const ask = gatewayAsker(app, given)
    const runtime = await ask({ url: '/api/runtimes' })
    const missing = runtime.statusCode === 200 ? noRuntimeError(runtime.json<RuntimesAnswer>()) : null
    if (missing) throw missing
    let seed = 1
    for (const name of options.models ?? ['test/tiny']) {
      const file = join(dir, `${name.replace('/', '--')}.gguf`)
      await writeTinyGguf({ file, seed: seed++, name })
      const imported = await ask({ method: 'POST', url: '/api/import', payload: { model: name, path: file } })
      if (imported.statusCode !== 200) throw new Error(`importing the test model ${name} failed: ${imported.statusCode} ${imported.body}`)
    }
    const url = await app.listen({ host: '127.0.0.1', port: 0 })
    const running = app
    return { app: running, url, close: async () => { await running.close(); await cleanup() } }
  } catch (err) {
    await app?.close()
    await cleanup()
    throw err
  }
}

/**
 * Requests to the gateway under test, with the first of config.yaml's `auth.api_keys` when the test turned keys on
 * (its keys_file's may lack a scope the kit's requests need: then the answer says so).
 */
function gatewayAsker (app: FastifyInstance, given: Record<string, unknown>): (request: InjectOptions) => Promise<LightMyRequestResponse> {
  const keys = (given.auth as { api_keys?: unknown } | undefined)?.api_keys
  const key = Array.isArray(keys) && typeof keys[0] === 'string' ? keys[0] : undefined
  return (request) => app.inject({ ...request, headers: { ...request.headers, ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) } })
}
