import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Config } from '../../../core/platform/config.js'
import { hashSecret, writeKeysFile, type KeyEntry } from '../../../plugins/security/keys-file.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { post, sharedServer, sseEvents } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// Two keys use the real llama-server through three surfaces; what /api/usage and /metrics say is held against what
// the clients were told. The tests run in order on one gateway: the restart closes it (and its llama-servers) last.

const ALICE = 'lg-alice-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG'
const BOSS = 'lg-boss-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH'
const MODEL = 'acme/tiny'
const as = (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` })

const KEYS: KeyEntry[] = [
  { name: 'alice', hash: hashSecret(ALICE), scopes: ['infer'], models: ['*'], limits: { tokens_per_day: 100_000, concurrent: 4 }, created: '2025-01-01T00:00:00Z' },
  { name: 'boss', hash: hashSecret(BOSS), scopes: ['infer', 'admin'], models: ['*'], limits: {}, created: '2025-01-01T00:00:00Z' },
]

interface Totals { requests: number, prompt_tokens: number, cached_tokens: number, generated_tokens: number, queue_ms: number, runtime_ms: number }
interface KeyUsage { key: string, today: { date: string, tokens: number, reserved: number }, limits: Record<string, number> | null, models: Array<Totals & { model: string }>, totals: Totals }

// Each app is closed once, by the test that means to or when the file ends.
const open = new Set<FastifyInstance>()
t.teardown(async () => { for (const app of open) await app.close() })
async function start (config: Config): Promise<{ app: FastifyInstance, url: string }> {
  const app = await buildTestApp(config)
  open.add(app)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}
async function stop (app: FastifyInstance): Promise<void> {
  open.delete(app)
  await app.close()
}

// Made by the first test that asks (a file's top level must not wait: the group's earlier files would end first).
const keyed = sharedServer(async () => {
  const dataDir = await tempDir(t, 'llamagate-usage-')
  const keysFile = join(dataDir, 'keys.yaml')
  await writeKeysFile(keysFile, { keys: KEYS })
  const runtime = await cpuRuntime()
  const config = await testConfig(t, {
    data_dir: dataDir,
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    // ignore_eos: a random-weights model may end early; the tests count tokens.
    default_options: { num_ctx: 512, num_parallel: 2, max_tokens: 32, ignore_eos: true },
  })
  const { app, url } = await start(config)
  await app.store.import(MODEL, (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf'), name: MODEL })).file)
  return { app, url, config, dataDir, keysFile }
})

async function usage (secret: string | null, query = ''): Promise<{ status: number, body: any }> {
  const { url } = await keyed()
  const res = await fetch(`${url}/api/usage${query}`, { headers: secret === null ? {} : as(secret) })
  return { status: res.status, body: await res.json() }
}

/** The value of a sample of the metrics text with exactly these labels (any order); undefined when absent. */
function sample (text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)\{(.*)\} (\S+)$/.exec(line)
    if (m === null || m[1] !== name) continue
    const found = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]))
    if (JSON.stringify(Object.entries(found).sort()) === JSON.stringify(Object.entries(labels).sort())) return Number(m[3])
  }
  return undefined
}

// What each key's clients were told, summed.
const seen = { alice: { requests: 0, prompt: 0, generated: 0 }, boss: { requests: 0, prompt: 0, generated: 0 } }
const messages = [{ role: 'user', content: 'tell me about llamas' }]

t.test('each key\'s requests, tokens and times are counted per model, as its clients were told', async (t) => {
  const { app, url } = await keyed()
  const count = (who: 'alice' | 'boss', prompt: number, generated: number): void => {
    seen[who].requests++
    seen[who].prompt += prompt
    seen[who].generated += generated
  }
  const whole = await (await post(`${url}/api/chat`, { model: MODEL, messages, stream: false, options: { max_tokens: 5 } }, as(ALICE))).json() as any
  count('alice', whole.prompt_eval_count, whole.eval_count)
  const streamed = (await sseEvents(await post(`${url}/api/chat`, { model: MODEL, messages, options: { max_tokens: 7 } }, as(ALICE)))).at(-1) as any
  count('alice', streamed.prompt_eval_count, streamed.eval_count)
  const openai = await (await post(`${url}/v1/chat/completions`, { model: MODEL, messages, max_tokens: 6 }, as(ALICE))).json() as any
  count('alice', openai.usage.prompt_tokens, openai.usage.completion_tokens)
  const openaiStream = (await sseEvents(await post(`${url}/v1/chat/completions`, { model: MODEL, messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } }, as(ALICE)))).at(-2) as any
  count('alice', openaiStream.usage.prompt_tokens, openaiStream.usage.completion_tokens)
  const embed = await post(`${url}/api/embed`, { model: MODEL, input: ['hello there', 'general kenobi'] }, as(ALICE))
  t.equal(embed.status, 200, 'embedded')
  count('alice', (await embed.json() as any).prompt_eval_count, 0)
  const bossChat = await (await post(`${url}/api/chat`, { model: MODEL, messages, stream: false, options: { max_tokens: 3 } }, as(BOSS))).json() as any
  count('boss', bossChat.prompt_eval_count, bossChat.eval_count)
  const bossOpenai = await (await post(`${url}/v1/chat/completions`, { model: MODEL, messages, max_tokens: 2 }, as(BOSS))).json() as any
  count('boss', bossOpenai.usage.prompt_tokens, bossOpenai.usage.completion_tokens)
  t.equal(seen.alice.generated + seen.boss.generated, 5 + 7 + 6 + 4 + 3 + 2, 'the answers reported what was asked')
  const refused = await post(`${url}/api/chat`, { model: 'acme/missing', messages, stream: false }, as(ALICE))
  t.equal(refused.status, 404, 'a request that reached no model')

  // Counted when each reply is over, which the server sees a moment after the client.
  await until('both keys\' requests counted', async () => {
    const { body } = await usage(BOSS, '?all=true')
    const requests = (body.keys as KeyUsage[]).map((k) => k.totals.requests)
    return requests[0] === seen.alice.requests && requests[1] === seen.boss.requests
  })
  const own = await usage(ALICE)
  t.equal(own.status, 200)
  t.equal(own.body.keys.length, 1, 'a key sees one entry: its own')
  const alice = own.body.keys[0] as KeyUsage
  t.equal(alice.key, 'alice')
  t.same(alice.limits, { tokens_per_day: 100_000, concurrent: 4 }, 'with its limits from the keys file')
  t.equal(alice.today.date, new Date().toISOString().slice(0, 10), 'today, in UTC')
  t.equal(alice.today.tokens, seen.alice.prompt + seen.alice.generated, 'today\'s tokens: its prompts and answers')
  t.equal(app.usage.tokensToday('alice'), alice.today.tokens, 'what the quotas read')
  t.equal(alice.models.length, 1, 'one model (the missing one is not counted)')
  const row = alice.models[0]!
  t.match(row, { model: MODEL, requests: 5, prompt_tokens: seen.alice.prompt, generated_tokens: seen.alice.generated })
  t.ok(row.queue_ms > 0, `its first request waited for the load: ${row.queue_ms} ms`)
  t.ok(row.runtime_ms > 0, `and its requests held slots: ${row.runtime_ms} ms`)
  t.ok(row.cached_tokens <= row.prompt_tokens, 'cached tokens are part of the prompts')
  t.same(alice.totals, (({ model: _, ...totals }) => totals)(row), 'the totals: its one model')

  const boss = (await usage(BOSS)).body.keys[0] as KeyUsage
  t.match(boss, { key: 'boss', limits: {}, today: { tokens: seen.boss.prompt + seen.boss.generated } })
  t.match(boss.models, [{ model: MODEL, requests: 2, prompt_tokens: seen.boss.prompt, generated_tokens: seen.boss.generated }])

  // The runtime's own count of the prompt tokens it took from its cache: the same, split between the keys.
  const metrics = await (await fetch(`${url}/metrics`, { headers: as(BOSS) })).text()
  const runtimeCached = sample(metrics, 'llamacpp:prompt_tokens_cached_total', { model: MODEL, purpose: 'generate' })
  t.ok(runtimeCached !== undefined && runtimeCached > 0, `the same prompt again came from the cache: ${runtimeCached} tokens`)
  t.equal(row.cached_tokens + boss.models[0]!.cached_tokens, runtimeCached, 'cached tokens as llama-server counted them')
})

t.test('a key sees its own usage; another key\'s, or everyone\'s, takes the admin scope', async (t) => {
  const own = (await usage(ALICE)).body
  t.same((await usage(ALICE, '?key=alice')).body, own, 'asking for itself by name is allowed')
  for (const query of ['?key=boss', '?all=true']) {
    const refused = await usage(ALICE, query)
    t.equal(refused.status, 403, `${query}: refused`)
    t.match(refused.body.error, /the API key "alice" may see only its own usage/)
  }
  const other = await usage(BOSS, '?key=alice')
  t.equal(other.status, 200)
  t.same(other.body.keys[0], own.keys[0], 'an admin sees another key\'s usage, with its limits')
  const all = await usage(BOSS, '?all=true')
  t.same(all.body.keys.map((k: KeyUsage) => k.key), ['alice', 'boss'], 'everyone\'s, in name order')
  t.equal((await usage(BOSS, '?key=nobody')).status, 404, 'a key that neither exists nor used anything')
  t.equal((await usage(null)).status, 401, 'no key, no usage')
  t.equal((await usage(BOSS, '?all=yes')).status, 400, 'all is true or false')
})

t.test('the metrics carry the same figures, labelled by key and model', async (t) => {
  const { url } = await keyed()
  const { body } = await usage(BOSS, '?all=true')
  const text = await (await fetch(`${url}/metrics`, { headers: as(BOSS) })).text()
  t.match(text, /# TYPE llamagate_key_requests_total counter/)
  for (const k of body.keys as KeyUsage[]) {
    const m = k.models[0]!
    const labels = { key: k.key, model: m.model }
    t.equal(sample(text, 'llamagate_key_requests_total', labels), m.requests, `${k.key}: requests`)
    t.equal(sample(text, 'llamagate_key_tokens_total', { ...labels, kind: 'prompt' }), m.prompt_tokens, `${k.key}: prompt tokens`)
    t.equal(sample(text, 'llamagate_key_tokens_total', { ...labels, kind: 'cached' }), m.cached_tokens, `${k.key}: cached tokens`)
    t.equal(sample(text, 'llamagate_key_tokens_total', { ...labels, kind: 'generated' }), m.generated_tokens, `${k.key}: generated tokens`)
    // The API shows whole milliseconds; the metrics, the seconds as summed.
    t.ok(Math.abs(sample(text, 'llamagate_key_queue_seconds_total', labels)! * 1000 - m.queue_ms) <= 0.5, `${k.key}: queue seconds`)
    t.ok(Math.abs(sample(text, 'llamagate_key_runtime_seconds_total', labels)! * 1000 - m.runtime_ms) <= 0.5, `${k.key}: runtime seconds`)
  }
  t.notMatch(text, ALICE, 'no secret in the labels')
})

t.test('with keys off, requests are counted as anonymous, and anyone may see everyone\'s', async (t) => {
  const { url, keysFile } = await keyed()
  await writeKeysFile(keysFile, { keys: [] })
  t.teardown(() => writeKeysFile(keysFile, { keys: KEYS }))
  const answer = await (await post(`${url}/api/generate`, { model: MODEL, prompt: 'hi', stream: false, options: { max_tokens: 3 } })).json() as any
  await until('the anonymous request counted', async () => (await usage(null)).body.keys[0].totals.requests === 1)
  const { body } = await usage(null)
  t.match(body.keys, [{ key: 'anonymous', limits: {}, today: { tokens: answer.prompt_eval_count + answer.eval_count }, models: [{ model: MODEL, requests: 1 }] }])
  const all = await usage(null, '?all=true')
  t.same(all.body.keys.map((k: KeyUsage) => k.key), ['alice', 'anonymous', 'boss'])
})

t.test('a restart keeps every total: the file is written on close and read on start', async (t) => {
  const { app, config, dataDir } = await keyed()
  const before = (await usage(BOSS, '?all=true')).body
  await stop(app)
  t.ok(existsSync(join(dataDir, 'usage.json')), 'written when the app closed')
  const again = await start(config)
  const after = await fetch(`${again.url}/api/usage?all=true`, { headers: as(BOSS) })
  t.same((await after.json() as any).keys, before.keys, 'the same usage after the restart')
  t.equal(again.app.usage.tokensToday('alice'), seen.alice.prompt + seen.alice.generated, 'today\'s tokens too')
  const text = await (await fetch(`${again.url}/metrics`, { headers: as(BOSS) })).text()
  t.equal(sample(text, 'llamagate_key_requests_total', { key: 'alice', model: MODEL }), seen.alice.requests, 'the counters go on from where they were')
  await stop(again.app)
})

t.test('a damaged usage file is set aside with a log line; the server starts and counts afresh', async (t) => {
  const lines: Array<{ level: number, msg: string, setAside?: string }> = []
  const stream = new Writable({ write (chunk, _enc, done) { for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l)); done() } })
  const damagedConfig = await testConfig(t)
  const file = join(damagedConfig.dataDir, 'usage.json')
  await writeFile(file, '{"version":1,"keys":{"alice":')
  const damaged = await buildTestApp(damagedConfig, { logger: { level: 'warn', stream } })
  t.teardown(() => damaged.close())
  const res = await damaged.inject({ url: '/api/usage' })
  t.equal(res.statusCode, 200, 'started and answering')
  t.same(res.json().keys, [{
    key: 'anonymous',
    today: { date: new Date().toISOString().slice(0, 10), tokens: 0, reserved: 0 },
    limits: {},
    models: [],
    totals: { requests: 0, prompt_tokens: 0, cached_tokens: 0, generated_tokens: 0, queue_ms: 0, runtime_ms: 0 },
  }], 'nothing counted yet')
  t.equal(await readFile(`${file}.bad`, 'utf8'), '{"version":1,"keys":{"alice":', 'the damaged file kept beside, as it was')
  t.match(lines, [{ level: 50, msg: /usage file could not be read/, setAside: `${file}.bad` }], 'said in the log')
})
