// The prompt caches with what llamagate's patch set adds to llama-server (runtimes/build/patches 0003, 0004), on the
// real llama-server: conversations its RAM prompt cache holds are saved too, and each restored save is judged by the
// first request its slot takes. Each test fails on a build without the patch it names. The hybrid and
// sliding-window architectures (0002) are in prompt-cache-architectures.case.ts.
import { readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { post, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'
import { prefix, restartGateway, watchCaches, type Watched } from '../../helpers/prompt-cache-watch.js'
import { until } from '../../helpers/until.js'

interface Answer { status: number, cached: number, prompt: number }

async function turn (server: InferenceServer, model: string, content: string, extra: object = {}): Promise<Answer> {
  const res = await post(`${server.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content }], max_tokens: 2, temperature: 0, ...extra })
  const body = await res.json() as { usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } }
  return { status: res.status, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? -1, prompt: body.usage?.prompt_tokens ?? -1 }
}

async function serve (t: Test, names: string[], values: Record<string, unknown> = {}): Promise<Watched> {
  return watchCaches(await serveTinyModels(t, names, { prompt_cache: { min_tokens: 32 }, ...values }))
}

/** The descriptions beside the saves: which key, id and how many tokens. */
async function sidecarsOf (server: InferenceServer): Promise<Array<{ key: string, id: string, tokens: number }>> {
  const dir = join(server.app.config.modelsDir, '.prompt-cache')
  const names = (await readdir(dir)).filter((f) => f.endsWith('.json'))
  return Promise.all(names.map(async (name) => JSON.parse(await readFile(join(dir, name), 'utf8')) as { key: string, id: string, tokens: number }))
}

const saves = async (server: InferenceServer): Promise<string[]> =>
  (await readdir(join(server.app.config.modelsDir, '.prompt-cache'))).filter((f) => f.endsWith('.bin'))

t.test('0003: a conversation moved out of its slot to the RAM prompt cache is saved too, and comes back', async (t) => {
  // One slot: the second conversation takes it, and llama-server moves the first into its RAM prompt cache.
  const values = { prompt_cache: { min_tokens: 32 }, default_options: { num_parallel: 1, num_ctx: 1024 } }
  const server = await serve(t, ['acme/ram'], values)
  const a = await turn(server, 'acme/ram', prefix(31, 150))
  const b = await turn(server, 'acme/ram', prefix(32, 60))
  t.equal(a.status + b.status, 400)
  await server.app.close()
  t.equal(server.saved.length, 2, `the slot's conversation and the one in the RAM cache saved (${server.saved.join(', ')} tokens)`)
  const sidecars = await sidecarsOf(server)
  // Each holds its prompt and what was generated after it (the last token generated is not in the cache).
  const near = (tokens: number, prompt: number): boolean => tokens >= prompt && tokens <= prompt + 2
  t.ok(sidecars.some((s) => near(s.tokens, a.prompt)) && sidecars.some((s) => near(s.tokens, b.prompt)), `one save each: ${sidecars.map((s) => s.tokens).join(', ')} tokens for prompts of ${a.prompt} and ${b.prompt}`)
  // The slot's own save removed, a new gateway: the one slot can only take the save from the RAM cache.
  for (const sidecar of sidecars.filter((s) => near(s.tokens, b.prompt))) {
    for (const ext of ['bin', 'json']) await rm(join(server.app.config.modelsDir, '.prompt-cache', `${sidecar.key}-${sidecar.id}.${ext}`))
  }
  const again = await restartGateway(t, server, values)
  const a2 = await turn(again, 'acme/ram', `${prefix(31, 150)} once more`)
  t.ok(again.restored.length === 1 && near(again.restored[0]!, a.prompt), `restored (${again.restored.join(', ')} tokens)`)
  t.ok(a2.cached >= a.prompt - 20, `the first conversation, saved from the RAM cache, reused ${a2.cached} of its ${a.prompt} tokens`)
})

t.test('0004: a restored save is judged by the first request its slot takes: reused', async (t) => {
  const server = await serve(t, ['acme/judged'])
  const first = await turn(server, 'acme/judged', prefix(33))
  await post(`${server.url}/api/stop`, { model: 'acme/judged' })
  const again = await turn(server, 'acme/judged', `${prefix(33)} and more`)
  t.ok(again.cached >= first.prompt - 20)
  await until('the restore judged', () => server.reused.length > 0)
  t.same(server.missed, [])
  t.ok(server.reused[0]! >= first.prompt - 20, `reused ${server.reused[0]} tokens`)
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  t.match(metrics, /llamagate_prompt_caches_total\{model="acme\/judged",action="reused"\} 1/)
  t.equal((await saves(server)).length, 1, 'the save stays')
})
