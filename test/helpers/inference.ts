import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { BuildOptions } from '../../core/server/app.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { buildTestApp, testConfig, tempDir } from './app.js'
import { realisticModel, type FixtureKind, type REALISTIC } from './realistic-models.js'
import { cpuRuntime } from './runtime.js'

type Test = Parameters<typeof tempDir>[0]

export interface InferenceServer {
  app: FastifyInstance
  /** `http://127.0.0.1:<port>` */
  url: string
}

/**
 * The whole gateway on a real socket, with the real CPU llama-server and tiny models imported under the
 * given names (each with its own seed, so they differ). Closed, with every runtime stopped, when the test ends.
 * llama-server runs on one thread (testConfig's num_thread 1; a test about threads unsets it). `configFile`: the
 * config.yaml the values stand for (testConfig); `build`: buildApp's options (a logger to read).
 */
export async function serveTinyModels (t: Test, names: string[] = ['acme/tiny'], values: Record<string, unknown> = {}, { configFile = null, build = {} }: { configFile?: string | null, build?: BuildOptions } = {}): Promise<InferenceServer> {
  const runtime = await cpuRuntime()
  const files = await tempDir(t, 'llamagate-models-')
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    ...values,
    // ignore_eos: a random-weights model may end early; tests count tokens.
    default_options: { num_ctx: 512, num_parallel: 2, max_tokens: 32, ignore_eos: true, ...(values.default_options as object) },
  }, configFile)
  const app = await buildTestApp(config, build)
  t.teardown(() => app.close())
  let seed = 1
  for (const name of names) {
    const file = join(files, `${name.replace('/', '--')}.gguf`)
    await writeTinyGguf({ file, seed: seed++, name })
    await app.store.import(name, file)
  }
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}

/**
 * A server made on first use and shared by the tests of a file that only read from it (STYLE.md: a llama-server
 * per file, not per test): `const tiny = sharedServer(() => serveTinyModels(t))` at the top, made with the file's
 * own `t` so that it closes when the file ends, then `const { url } = await tiny()` in each test.
 * Closing an app stops every llama-server of the process (one runtime supervisor per process, as in the gateway):
 * the tests that share a server come before those that build and close an app of their own.
 */
export function sharedServer<T> (make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined
  return () => (made ??= make())
}

/**
 * Imports a tiny model whose header says it was trained on `nCtxTrain` tokens of context. llama-server caps a
 * slot's context at the model's training context (2048 for the default tiny model: a generation of it ends
 * there, after a few seconds), so a test that needs a generation running for a minute or more uses this one.
 */
export async function importLongContextModel (t: Test, app: FastifyInstance, name: string, nCtxTrain = 32_768): Promise<void> {
  const file = join(await tempDir(t, 'llamagate-models-'), 'long.gguf')
  await writeTinyGguf({ file, name, nCtxTrain })
  await app.store.import(name, file)
}

/** A fixture to import: its kind, or a chat fixture with a projector beside it (`true`: the vision one). */
export type FixtureModel = FixtureKind | { kind: keyof typeof REALISTIC, projector: true | 'audio' }

/**
 * The whole gateway on a real socket with realistic tiny models (a real vocabulary and chat template, see
 * realistic-models.ts) under the given names, llama-server on one thread.
 */
export async function serveRealisticModels (t: Test, models: Record<string, FixtureModel>, values: Record<string, unknown> = {}): Promise<InferenceServer> {
  const runtime = await cpuRuntime()
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    ...values,
    default_options: { num_ctx: 1024, num_parallel: 1, max_tokens: 32, ...(values.default_options as object) },
  })
  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  for (const [name, fixture] of Object.entries(models)) {
    if (typeof fixture === 'string') await app.store.import(name, await realisticModel(fixture))
    else await app.store.import(name, await realisticModel(fixture.kind), { projector: await realisticModel(fixture.projector === 'audio' ? 'audioProjector' : 'projector') })
  }
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}

/** POSTs JSON and returns the response. */
export function post (url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal })
}

/** Reads an SSE response into the parsed `data` of each event (`[DONE]` kept as a string). */
export async function sseEvents (res: Response): Promise<unknown[]> {
  const text = await res.text()
  // Comment blocks (`: ...`, the progress of a request that waited) are skipped, as every SSE parser does.
  return text.split('\n\n').filter((e) => e.trim() !== '' && !e.startsWith(':')).map((e) => {
    if (!e.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(e)}`)
    const data = e.slice(6)
    return data === '[DONE]' ? data : JSON.parse(data)
  })
}

/** Reads an NDJSON response into objects. */
export async function ndjsonEvents (res: Response): Promise<unknown[]> {
  return (await res.text()).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
}

/**
 * Reads a streamed (SSE) response until its first event. `next` reads on to the next whole event and returns it;
 * `rest` reads on to the end and returns the whole text.
 */
export async function firstEvent (res: Response): Promise<{ next: () => Promise<string>, rest: () => Promise<string> }> {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let seen = 0
  const readEvent = async (): Promise<string> => {
    while (text.indexOf('\n\n', seen) === -1) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the stream ended before its next event: ${text.slice(seen)}`)
      text += decoder.decode(value, { stream: true })
    }
    const end = text.indexOf('\n\n', seen) + 2
    const event = text.slice(seen, end)
    seen = end
    return event
  }
  // Progress comments of a request that waited come before its first event.
  while ((await readEvent()).startsWith(':'));
  return {
    next: readEvent,
    rest: async () => {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    },
  }
}
