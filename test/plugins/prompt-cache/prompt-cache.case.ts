// Prompt caches that outlive a runtime (plugins/prompt-cache/prompt-caches.ts), with the real llama-server: saved on
// each way a runtime stops, restored when the model loads again so that a follow-up evaluates only its new tokens,
// dropped when they do not restore, kept within their budget, deleted with their model, and found again by a
// restarted gateway.
import { readdir, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { buildTestApp, testConfig } from '../../helpers/app.js'
import { post, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { prefix } from '../../helpers/prompt-cache-watch.js'
import { until } from '../../helpers/until.js'

interface Answer { status: number, cached: number, prompt: number }

/** One chat turn through the OpenAI surface; `cached`: the prompt tokens the runtime did not evaluate. */
async function turn (server: InferenceServer, model: string, content: string, extra: object = {}): Promise<Answer> {
  const res = await post(`${server.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content }], max_tokens: 2, temperature: 0, ...extra })
  const body = await res.json() as { error?: unknown, usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } }, timings?: { cache_n?: number } }
  if (res.status !== 200) t.comment(JSON.stringify(body.error))
  return { status: res.status, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? body.timings?.cache_n ?? -1, prompt: body.usage?.prompt_tokens ?? -1 }
}

async function serve (t: Test, names: string[], values: Record<string, unknown> = {}): Promise<InferenceServer & { saved: string[], restored: string[] }> {
  const server = await serveTinyModels(t, names, { prompt_cache: { min_tokens: 32 }, ...values })
  const saved: string[] = []
  const restored: string[] = []
  server.app.promptCache!.events.on('saved', (model) => saved.push(model))
  server.app.promptCache!.events.on('restored', (model) => restored.push(model))
  return { ...server, saved, restored }
}

const cacheFiles = async (app: InferenceServer['app']): Promise<string[]> =>
  (await readdir(join(app.config.modelsDir, '.prompt-cache'))).filter((f) => f.endsWith('.bin')).sort()

t.test('saved on /api/stop, restored at the next load: the follow-up evaluates only its new tokens', async (t) => {
  const server = await serve(t, ['acme/tiny'])
  const first = await turn(server, 'acme/tiny', prefix(1))
  t.equal(first.status, 200)
  t.ok(first.prompt > 32, `a prompt worth saving (${first.prompt} tokens)`)
  await post(`${server.url}/api/stop`, { model: 'acme/tiny' })
  t.same(server.saved, ['acme/tiny'], 'saved as it stopped')
  t.equal((await cacheFiles(server.app)).length, 1)

  const again = await turn(server, 'acme/tiny', `${prefix(1)} and then some`)
  t.equal(again.status, 200)
  t.same(server.restored, ['acme/tiny'], 'restored when it loaded again')
  // All but the chat template's tail after the shared words: those differ, and are evaluated.
  t.ok(again.cached >= first.prompt - 20, `the runtime reused ${again.cached} of ${again.prompt} prompt tokens (the first turn had ${first.prompt})`)
})

t.test('each way a runtime stops saves: keep-alive expiry, eviction for another model, replaced, shutdown', async (t) => {
  const server = await serve(t, ['acme/a', 'acme/b'], { limits: { max_loaded_models: 1 } })
  t.equal((await turn(server, 'acme/a', prefix(2), { keep_alive: 0 })).status, 200)
  await until('the save as keep_alive 0 unloads it', () => server.saved.length === 1)
  t.same(server.saved, ['acme/a'], 'keep_alive 0: saved as it unloaded')
  t.equal((await turn(server, 'acme/a', prefix(3))).status, 200)
  t.equal((await turn(server, 'acme/b', prefix(4))).status, 200)
  t.same(server.saved, ['acme/a', 'acme/a'], 'evicted for acme/b: saved')
  // Asked for with another context: a new instance, and the one it replaces goes once idle.
  t.equal((await turn(server, 'acme/b', prefix(14), { options: { num_ctx: 1024 } })).status, 200)
  await until('the replaced instance\'s save', () => server.saved.length === 3)
  t.same(server.saved, ['acme/a', 'acme/a', 'acme/b'], 'an instance of the same model with other options took its place: saved')
  await server.app.close()
  t.same(server.saved, ['acme/a', 'acme/a', 'acme/b', 'acme/b'], 'shutdown: saved')
  t.equal((await cacheFiles(server.app)).length, 4, 'four conversations kept')
})

t.test('two conversations in two slots: after a reload each goes to the slot holding its own prefix', async (t) => {
  const server = await serve(t, ['acme/two'])
  const a = await turn(server, 'acme/two', prefix(5))
  const b = await turn(server, 'acme/two', prefix(6))
  await post(`${server.url}/api/stop`, { model: 'acme/two' })
  t.equal(server.saved.length, 2, 'both slots saved')
  const b2 = await turn(server, 'acme/two', `${prefix(6)} again`)
  const a2 = await turn(server, 'acme/two', `${prefix(5)} again`)
  t.equal(server.restored.length, 2, 'both restored, one per slot')
  t.ok(b2.cached >= b.prompt - 20, `b reused ${b2.cached} (its prefix: ${b.prompt})`)
  t.ok(a2.cached >= a.prompt - 20, `a reused ${a2.cached} (its prefix: ${a.prompt})`)
})

t.test('a damaged cache is dropped and the request answers as if there were none', async (t) => {
  const server = await serve(t, ['acme/bad'])
  const first = await turn(server, 'acme/bad', prefix(7))
  await post(`${server.url}/api/stop`, { model: 'acme/bad' })
  const [file] = await cacheFiles(server.app)
  await truncate(join(server.app.config.modelsDir, '.prompt-cache', file!), 200) // its tokens whole, its KV state cut
  const again = await turn(server, 'acme/bad', prefix(7))
  t.equal(again.status, 200, 'answered')
  t.same(server.restored, [], 'not restored')
  t.ok(again.cached < first.prompt / 2, `evaluated afresh (${again.cached} cached)`)
  t.same(await cacheFiles(server.app), [], 'the damaged file is gone')
})

t.test('other cache types are another shape: nothing restored across them', async (t) => {
  const server = await serve(t, ['acme/shape'])
  await turn(server, 'acme/shape', prefix(8))
  await post(`${server.url}/api/stop`, { model: 'acme/shape' })
  const other = await turn(server, 'acme/shape', prefix(8), { options: { cache_type_k: 'f32', cache_type_v: 'f32' } })
  t.equal(other.status, 200)
  t.same(server.restored, [], 'an f32 cache never takes an f16 save')
})

t.test('the budget: the least recently used go first; a longer save of the same conversation replaces the shorter', async (t) => {
  const server = await serve(t, ['acme/budget'])
  await turn(server, 'acme/budget', prefix(9))
  await post(`${server.url}/api/stop`, { model: 'acme/budget' })
  const [one] = await cacheFiles(server.app)
  // The same conversation, one turn longer: the new save covers the old.
  await turn(server, 'acme/budget', `${prefix(9)} more words here`)
  await post(`${server.url}/api/stop`, { model: 'acme/budget' })
  const files = await cacheFiles(server.app)
  t.equal(files.length, 1, 'one file for the conversation')
  t.not(files[0], one, 'the longer save')
})

t.test('a budget that holds one save keeps the most recently used', async (t) => {
  // One save of these prompts is 250-300 KB for the tiny model: 400 KiB holds one, not two.
  const server = await serve(t, ['acme/small'], { prompt_cache: { min_tokens: 32, size: '400KiB' } })
  await turn(server, 'acme/small', prefix(10))
  await post(`${server.url}/api/stop`, { model: 'acme/small' })
  const [older] = await cacheFiles(server.app)
  await turn(server, 'acme/small', prefix(13)) // another conversation; the older cache is restored, unused
  await post(`${server.url}/api/stop`, { model: 'acme/small' })
  const kept = await cacheFiles(server.app)
  t.equal(kept.length, 1, 'one save fits')
  t.not(kept[0], older, 'the newer conversation\'s')
})

t.test('deleting a model deletes its caches; a restarted gateway restores what the last one saved', async (t) => {
  const server = await serve(t, ['acme/keep', 'acme/gone'])
  await turn(server, 'acme/keep', prefix(11))
  await turn(server, 'acme/gone', prefix(12))
  await server.app.close()
  t.equal((await cacheFiles(server.app)).length, 2)

  // The same data folder, a new gateway: the caches are found on disk.
  const runtime = await cpuRuntime()
  const config = await testConfig(t, { data_dir: server.app.config.dataDir, runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, prompt_cache: { min_tokens: 32 }, default_options: { num_ctx: 512, num_parallel: 2 } })
  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  const restored: string[] = []
  app.promptCache!.events.on('restored', (model) => restored.push(model))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  await app.store.delete('acme/gone')
  t.equal((await cacheFiles(app)).length, 1, 'acme/gone\'s cache went with it')
  const again = await turn({ app, url }, 'acme/keep', `${prefix(11)} after a restart`)
  t.equal(again.status, 200)
  t.same(restored, ['acme/keep'], 'restored by the new gateway')
  t.ok(again.cached > 32, `reused ${again.cached} tokens`)
})
