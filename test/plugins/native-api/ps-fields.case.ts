import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { firstEvent, post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// Every field docs/api.md lists for GET /api/ps, with its value checked against what it stands for: the memory
// estimate, the keep-alive, the load-time options, the llama-server process, the requests running and waiting.

type Entry = Record<string, any>
const FIELDS = ['name', 'model', 'size', 'format', 'digest', 'details', 'expires_at', 'size_vram', 'context_length', 'max_context_length',
  'num_parallel', 'state', 'purpose', 'runtime', 'pid', 'active_requests', 'queued_requests', 'loading', 'expected_wait', 'rpc_workers', 'estimates', 'swap', 'where']

async function ps (url: string): Promise<Entry[]> {
  const res = await fetch(`${url}/api/ps`)
  if (res.status !== 200) throw new Error(`/api/ps answered ${res.status}`)
  return ((await res.json()) as { models: Entry[] }).models
}


const MINUTE = 60_000
const near = (iso: string, expected: number, toleranceMs = 5000): boolean => Math.abs(Date.parse(iso) - expected) <= toleranceMs

t.test('/api/ps: every documented field, with its value', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_thread: 1, num_ctx: 256, num_parallel: 2, max_tokens: 2 } })
  const res = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hi', stream: false, keep_alive: '10m' })
  t.equal(res.status, 200)
  const models = await ps(url)
  t.equal(models.length, 1, 'one model loaded')
  const m = models[0]!
  t.same(Object.keys(m).sort(), [...FIELDS].sort(), 'exactly the documented fields')
  const tag = ((await (await fetch(`${url}/api/tags`)).json()) as { models: Entry[] }).models[0]!
  t.equal(m.name, 'acme/tiny')
  t.equal(m.model, 'acme/tiny')
  t.equal(m.format, 'gguf')
  t.equal(m.digest, tag.digest, 'digest: the record\'s')
  t.same(m.details, tag.details, 'details: the record\'s')
  // size: the estimate of the memory budget, weights + KV cache (K and V, f16, every layer and KV head, for
  // num_ctx x num_parallel tokens), from the GGUF's own shape.
  const info = ((await (await post(`${url}/api/show`, { model: 'acme/tiny' })).json()) as { model_info: Record<string, number> }).model_info
  const arch = (info['general.architecture'] as unknown as string)
  const layers = info[`${arch}.block_count`]!
  const heads = info[`${arch}.attention.head_count`]!
  const kvHeads = info[`${arch}.attention.head_count_kv`] ?? heads
  const kvWidth = (info[`${arch}.embedding_length`]! / heads) * kvHeads
  const expectedSize = tag.size + layers * kvWidth * (2 + 2) * 256 * 2
  t.equal(m.size, expectedSize, `size: ${tag.size} bytes of weights + the KV cache of 512 tokens = ${expectedSize}`)
  t.equal(m.size_vram, 0, 'size_vram: 0 on the CPU runtime')
  t.equal(m.context_length, 256, 'context_length: num_ctx (per request)')
  t.equal(m.num_parallel, 2, 'num_parallel: the option')
  t.equal(m.state, 'loaded')
  t.equal(m.purpose, 'generate')
  t.equal(m.runtime, 'cpu')
  t.equal(m.where, 'local', 'where: a llama-server here')
  t.equal(m.active_requests, 0)
  t.equal(m.queued_requests, 0)
  t.equal(m.loading, null, 'loading: null once it serves')
  t.equal(m.expected_wait, 0, 'expected_wait: 0 with a slot free')
  t.same(m.rpc_workers, [], 'rpc_workers: none, it runs here alone')
  t.type(m.estimates.load, 'number', 'estimates.load: its load was measured')
  t.type(m.estimates.request, 'number', 'estimates.request: its request was measured')
  t.equal(m.estimates.return_gap, null, 'estimates.return_gap: no request came back to it yet')
  t.equal(m.swap, null, 'swap: it took free room, replacing nothing')
  t.ok(near(m.expires_at, Date.now() + 10 * MINUTE), `expires_at ${m.expires_at}: about 10 minutes away (keep_alive "10m")`)
  t.match(m.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'ISO 8601 UTC with milliseconds')
  // pid: the live llama-server running this model with these options.
  t.type(m.pid, 'number')
  t.ok(isAlive(m.pid), 'pid: a live process')
  const args = (await readFile(`/proc/${m.pid}/cmdline`, 'utf8')).split('\0')
  t.match(args[0], /llama-server$/, `pid runs llama-server (${args[0]})`)
  t.equal(args[args.indexOf('--model') + 1], app.store.ggufPath(app.store.get('acme/tiny')), 'with this model\'s GGUF')
  t.equal(args[args.indexOf('--ctx-size') + 1], '512', 'with --ctx-size num_ctx x num_parallel')
  t.equal(args[args.indexOf('--parallel') + 1], '2')
})

t.test('expires_at follows each request\'s keep_alive; a negative keep_alive keeps the model loaded for good', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 2 } })
  const generate = (keepAlive: unknown): Promise<Response> => post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hi', stream: false, keep_alive: keepAlive })
  t.equal((await generate('10m')).status, 200)
  t.ok(near((await ps(url))[0]!.expires_at, Date.now() + 10 * MINUTE), 'keep_alive "10m": 10 minutes away')
  t.equal((await generate(120)).status, 200)
  t.ok(near((await ps(url))[0]!.expires_at, Date.now() + 2 * MINUTE), 'keep_alive 120 (seconds): 2 minutes away')
  t.equal((await generate(-1)).status, 200)
  const forever = (await ps(url))[0]!
  t.ok(Date.parse(forever.expires_at) > Date.parse('2300-01-01T00:00:00Z'), `keep_alive -1: a far-future expires_at (${forever.expires_at})`)
  t.equal((await generate('-1m')).status, 200)
  t.ok(Date.parse((await ps(url))[0]!.expires_at) > Date.parse('2300-01-01T00:00:00Z'), 'keep_alive "-1m": the same')
  // Set a short keep-alive, then a negative one: the model must outlive the short one.
  t.equal((await generate('1s')).status, 200)
  t.equal((await generate(-1)).status, 200)
  await sleep(2500)
  const after = await ps(url)
  t.equal(after.length, 1, 'still loaded 2.5 s after a request with keep_alive "1s" was followed by -1')
  t.equal(after[0]!.pid, forever.pid, 'the same llama-server')
  t.ok(isAlive(forever.pid))
  // And a keep_alive 0 still unloads it afterwards.
  t.equal((await generate(0)).status, 200)
  await until('unloaded after keep_alive 0', async () => (await ps(url)).length === 0, 5000)
  t.pass('keep_alive 0 unloaded it')
})

t.test('a negative keep_alive in config.yaml keeps models loaded; a request\'s own keep_alive still wins', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { keep_alive: -1, default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 2 } })
  t.equal((await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hi', stream: false })).status, 200)
  t.ok(Date.parse((await ps(url))[0]!.expires_at) > Date.parse('2300-01-01T00:00:00Z'), 'config keep_alive -1: a far-future expires_at')
  t.equal((await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hi', stream: false, keep_alive: '1s' })).status, 200)
  t.ok(near((await ps(url))[0]!.expires_at, Date.now() + 1000, 1000), 'a request\'s keep_alive "1s" wins')
  await until('unloaded a second later', async () => (await ps(url)).length === 0, 5000)
  t.pass('unloaded')
})

t.test('active_requests and queued_requests while one request runs and two wait (num_parallel 1)', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1, max_tokens: 2 } })
  t.equal((await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [] })).status, 200, 'loaded first')
  const controller = new AbortController()
  const running = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 4000 } }, {}, controller.signal)
  const first = await firstEvent(running)
  t.teardown(() => controller.abort())
  const waiting = [1, 2].map((i) => post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: `wait ${i}` }] }))
  const busy = await until('two requests queued', async () => { const m = (await ps(url))[0]; return m?.queued_requests === 2 ? m : undefined }, 10_000)
  t.equal(busy.active_requests, 1, 'active_requests: the one generating')
  t.equal(busy.queued_requests, 2, 'queued_requests: the two waiting')
  t.equal(busy.state, 'loaded')
  t.ok(near(busy.expires_at, Date.now() + 5 * MINUTE), `while busy, expires_at is the keep-alive (5m) from now: ${busy.expires_at}`)
  controller.abort()
  await first.rest().catch(() => {})
  for (const res of await Promise.all(waiting)) t.equal(res.status, 200, 'a waiting request was served')
  const idle = await until('all requests done', async () => { const m = (await ps(url))[0]; return m?.active_requests === 0 && m.queued_requests === 0 ? m : undefined }, 10_000)
  t.equal(idle.state, 'loaded', 'idle and still loaded')
})

t.test('state: "loading" while llama-server starts, then "loaded"; "loaded" or "unloading" while it stops, then gone', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1, max_tokens: 2 } })
  const states: string[] = []
  let loadingEntry: Entry | undefined
  const load = post(`${url}/api/chat`, { model: 'acme/tiny', messages: [] })
  let done = false
  void load.finally(() => { done = true })
  while (!done) {
    const m = (await ps(url))[0]
    if (m && states.at(-1) !== m.state) states.push(m.state)
    if (m?.state === 'loading') loadingEntry ??= m
  }
  t.equal((await load).status, 200)
  const m = (await ps(url))[0]!
  if (states.at(-1) !== m.state) states.push(m.state)
  t.same(states, ['loading', 'loaded'], `states seen while it loaded: ${states.join(' -> ')}`)
  if (loadingEntry) t.equal(loadingEntry.name, 'acme/tiny', 'a loading model is listed with its fields')
  // Stopping a busy model: llama-server gets SIGTERM and up to half a second before SIGKILL; here it exits within
  // milliseconds, so "unloading" is rarely caught between two polls: only the order is checked.
  const running = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 4000 } })
  const first = await firstEvent(running)
  const stop = post(`${url}/api/stop`, { model: 'acme/tiny' })
  let stopped = false
  void stop.finally(() => { stopped = true })
  const seen: string[] = []
  while (!stopped) {
    const entry = (await ps(url))[0]
    const state = entry?.state ?? 'gone'
    if (seen.at(-1) !== state) seen.push(state)
  }
  t.equal((await stop).status, 200)
  await first.rest()
  t.ok(seen.every((state) => ['loaded', 'unloading', 'gone'].includes(state)), `states seen while it stopped: ${seen.join(' -> ')}`)
  t.same(await ps(url), [], 'gone once stopped')
})
