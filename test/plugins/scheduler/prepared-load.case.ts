import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { firstEvent, importLongContextModel, post, serveRealisticModels, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { lowPriorityWhileHeld } from '../../helpers/held-priority.js'

// A load waiting for room has its runtime started as far as it goes without the memory (llama.cpp patch 0010's
// --load-gate: the process up, the model's metadata and vocabulary read), once it is first in line; when the model
// in its way goes, it loads on from there. Real llama-servers: the busy model is kept busy by a long answer.

interface PsModel { name: string, state: string, pid: number | null, estimates?: Record<string, number | null>, swap?: { replaced: string, reason: string } | null }
interface Prepared { name: string, pid: number | null, why: string, expires_at: string | null }

async function ps (url: string): Promise<PsModel[]> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: PsModel[] }).models
}

async function prepared (url: string): Promise<Prepared[]> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { prepared: Prepared[] }).prepared
}

/**
 * Two models with Gemma 3's real vocabulary (262,144 tokens): a whole load takes 350 ms or more here, so that a
 * runtime standing by pays (a tiny test vocabulary loads in tens of milliseconds, where none is made).
 */
const TWO_VOCABULARIES = { 'acme/a': 'gemma3', 'acme/b': 'gemma3' } as const

/** Two models that do not fit together; acme/a answers for as long as the test lets it. */
async function twoModels (t: Parameters<typeof serveTinyModels>[0]): Promise<Awaited<ReturnType<typeof serveTinyModels>>> {
  const served = await serveTinyModels(t, ['acme/b'], {
    limits: { max_loaded_models: 1, min_residency: '0s', swap_wait: '60s', load_timeout: '60s' },
    default_options: { num_ctx: 4096, num_parallel: 1 },
  })
  await importLongContextModel(t, served.app, 'acme/a')
  return served
}

t.test('a load waiting for a busy model is prepared meanwhile, then loads from its gate once the room is free', async (t) => {
  const { app, url } = await twoModels(t)
  const loads: Array<{ model: string, seconds: number, prepared: boolean }> = []
  app.scheduler.events.on('loaded', (model, _purpose, seconds, prepared) => loads.push({ model, seconds, prepared }))
  const holder = new AbortController()
  const long = await post(`${url}/api/chat`, { model: 'acme/a', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 32_000 } }, {}, holder.signal)
  await firstEvent(long)
  const restoreHolder = await lowPriorityWhileHeld(t, url, 'acme/a')
  const b = post(`${url}/api/chat`, { model: 'acme/b', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 2 } })

  const waiting = await until('acme/b prepared while acme/a serves', async () => (await prepared(url)).find((m) => m.name === 'acme/b'))
  t.equal(waiting.why, 'waiting_for_room')
  t.equal(waiting.expires_at, null)
  t.ok(waiting.pid !== null && isAlive(waiting.pid), '/api/ps names its llama-server, alive')
  // Its pid is the shell's until it execs llama-server in place (runtimes/process/watchdog.ts).
  const cmdline = await until('its llama-server running', () => { const c = readFileSync(`/proc/${waiting.pid}/cmdline`, 'utf8').split('\0').join(' '); return c.includes('llama-server') ? c : undefined })
  t.match(cmdline, /--load-gate \S+\.gate/, 'started with a gate')
  t.same((await ps(url)).filter((m) => m.name === 'acme/a').map((m) => m.state), ['loaded'], 'acme/a still holds the room and serves')
  t.same(loads.map((l) => l.model), ['acme/a'], 'acme/b has not loaded')

  restoreHolder()
  holder.abort()
  const answer = await b
  t.equal(answer.status, 200, 'acme/b answers once acme/a went')
  await answer.arrayBuffer()
  const bLoad = loads.find((l) => l.model === 'acme/b')
  t.ok(bLoad?.prepared, 'its load was the prepared one')
  const [now] = await ps(url)
  t.equal(now!.name, 'acme/b')
  t.equal(now!.pid, waiting.pid, 'the process prepared is the one that serves')
  t.type(now!.estimates?.prepared_load, 'number', '/api/ps: the prepared load\'s time, room given to serving')
  t.equal(now!.estimates?.load, null, 'apart from whole loads, of which acme/b had none')
  t.type(now!.estimates?.prepare, 'number', '/api/ps: its preparation measured, spawn to gate (what the swap did not wait for)')
  t.match(now!.swap, { replaced: 'acme/a' })
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /llamagate_model_swap_cost_seconds\{model="acme\/b",cost="prepared_load"\} [\d.e-]+/, '/metrics has it too')
})

t.test('a model whose runtime fails while prepared fails its requests at once, and unloads nothing for them', async (t) => {
  const { app, url } = await twoModels(t)
  // A vocabulary llama.cpp does not know: the GGUF imports, and the runtime fails reading it, before its gate.
  const file = join(await tempDir(t, 'llamagate-models-'), 'bad.gguf')
  await writeTinyGguf({ file, name: 'acme/bad', metadata: { 'tokenizer.ggml.model': { type: 'string', value: 'no-such-tokenizer' } } })
  await app.store.import('acme/bad', file)
  const evicted: string[] = []
  app.scheduler.events.on('evicted', (model) => evicted.push(model))
  const holder = new AbortController()
  t.teardown(() => holder.abort())
  const long = await post(`${url}/api/chat`, { model: 'acme/a', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 32_000 } }, {}, holder.signal)
  await firstEvent(long)
  await lowPriorityWhileHeld(t, url, 'acme/a')
  const res = await post(`${url}/api/chat`, { model: 'acme/bad', stream: false, messages: [{ role: 'user', content: 'hi' }] })
  const body = await res.json() as { error: string }
  t.equal(res.status, 502, `the request fails (${body.error})`)
  t.match(body.error, /acme\/bad.*failed to start/, 'with the runtime\'s own failure')
  t.same(evicted, [], 'acme/a was not unloaded for it')
  t.same((await ps(url)).map((m) => [m.name, m.state]), [['acme/a', 'loaded']], 'acme/a still serves')
  t.same(await prepared(url), [], 'and nothing of acme/bad is left')
})

t.test('a model given up for another stands by, prepared: its next request loads from its gate; a stop ends it', async (t) => {
  const { app, url } = await serveRealisticModels(t, TWO_VOCABULARIES, {
    limits: { max_loaded_models: 1, min_residency: '0s' },
    default_options: { num_ctx: 512, num_parallel: 1, max_tokens: 2 },
  })
  const loads: Array<{ model: string, prepared: boolean }> = []
  app.scheduler.events.on('loaded', (model, _purpose, _seconds, prepared) => loads.push({ model, prepared }))
  const ask = async (model: string): Promise<void> => {
    const res = await post(`${url}/api/generate`, { model, prompt: 'hi', stream: false })
    t.equal(res.status, 200, `${model} answered`)
    await res.arrayBuffer()
  }
  await ask('acme/a')
  await ask('acme/b')
  const standing = await until('acme/a standing by once acme/b has loaded', async () => (await prepared(url)).find((m) => m.name === 'acme/a'))
  t.ok(standing.pid !== null && isAlive(standing.pid), 'its runtime runs, parked')
  t.equal(standing.why, 'standing_by')
  t.ok(standing.expires_at !== null && Date.parse(standing.expires_at) > Date.now(), 'until its keep-alive passes')
  t.same((await ps(url)).map((m) => [m.name, m.state]), [['acme/b', 'loaded']], '/api/ps\'s models: acme/b alone, as Ollama lists what is loaded')

  await ask('acme/a')
  t.same(loads, [{ model: 'acme/a', prepared: false }, { model: 'acme/b', prepared: false }, { model: 'acme/a', prepared: true }], 'acme/a came back from its gate')
  const [back] = await ps(url)
  t.equal(back!.name, 'acme/a')
  t.equal(back!.pid, standing.pid, 'the runtime that stood by is the one that serves')

  const bStanding = await until('acme/b standing by in turn', async () => (await prepared(url)).find((m) => m.name === 'acme/b'))
  await fetch(`${url}/api/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/b' }) })
  await until('acme/b\'s parked runtime gone once the model is stopped', () => !isAlive(bStanding.pid!))
  t.same(await prepared(url), [], 'nothing of acme/b is left')
})

t.test('a runtime standing by goes when its keep-alive passes unused', async (t) => {
  const { url } = await serveRealisticModels(t, TWO_VOCABULARIES, {
    keep_alive: '4s',
    limits: { max_loaded_models: 1, min_residency: '0s' },
    default_options: { num_ctx: 512, num_parallel: 1, max_tokens: 2 },
  })
  await (await post(`${url}/api/generate`, { model: 'acme/a', prompt: 'hi', stream: false })).arrayBuffer()
  // acme/a stands by from the moment acme/b's load sends it away: looked for while acme/b loads and answers, since on
  // a busy machine its keep-alive may pass before acme/b's answer is back.
  const standingBy = until('acme/a standing by', async () => (await prepared(url)).find((m) => m.name === 'acme/a'))
  await (await post(`${url}/api/generate`, { model: 'acme/b', prompt: 'hi', stream: false })).arrayBuffer()
  const standing = await standingBy
  await until('its runtime gone after the keep-alive', () => !isAlive(standing.pid!), 20_000)
  t.notOk((await prepared(url)).some((m) => m.name === 'acme/a'), 'no longer in /api/ps')
})

t.test('limits.prepare_ahead false: every load starts from nothing, and nothing stands by', async (t) => {
  const { app, url } = await serveRealisticModels(t, TWO_VOCABULARIES, {
    limits: { max_loaded_models: 1, min_residency: '0s', prepare_ahead: false },
    default_options: { num_ctx: 512, num_parallel: 1, max_tokens: 2 },
  })
  const loads: boolean[] = []
  app.scheduler.events.on('loaded', (_model, _purpose, _seconds, prepared) => loads.push(prepared))
  let seen = 0
  for (const model of ['acme/a', 'acme/b', 'acme/a', 'acme/b']) {
    await (await post(`${url}/api/generate`, { model, prompt: 'hi', stream: false })).arrayBuffer()
    seen += (await prepared(url)).length
  }
  t.same(loads, [false, false, false, false], 'four whole loads')
  t.equal(seen, 0, '/api/ps never showed a prepared runtime')
})

t.test('/api/ps\'s prepared runtimes are cut to a key\'s models, as its models are', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  const secrets = { ops: 'lg-test-ops-00000123456789', narrow: 'lg-test-narrow-00123456789' }
  await writeKeysFile(keysFile, {
    keys: [
      { name: 'ops', hash: hashSecret(secrets.ops), scopes: ['infer', 'manage', 'admin'], models: ['*'], limits: {}, created: new Date().toISOString() },
      { name: 'narrow', hash: hashSecret(secrets.narrow), scopes: ['infer'], models: ['acme/b'], limits: {}, created: new Date().toISOString() },
    ],
  })
  const { url } = await serveRealisticModels(t, TWO_VOCABULARIES, {
    auth: { keys_file: keysFile },
    limits: { max_loaded_models: 1, min_residency: '0s' },
    default_options: { num_ctx: 512, num_parallel: 1, max_tokens: 2 },
  })
  const as = (key: keyof typeof secrets): Record<string, string> => ({ authorization: `Bearer ${secrets[key]}` })
  for (const model of ['acme/a', 'acme/b']) {
    const res = await post(`${url}/api/generate`, { model, prompt: 'hi', stream: false }, as('ops'))
    t.equal(res.status, 200)
    await res.arrayBuffer()
  }
  const listed = async (key: keyof typeof secrets): Promise<{ models: Array<{ name: string }>, prepared: Array<{ name: string }> }> =>
    await (await fetch(`${url}/api/ps`, { headers: as(key) })).json() as { models: Array<{ name: string }>, prepared: Array<{ name: string }> }
  await until('acme/a standing by', async () => (await listed('ops')).prepared.some((p) => p.name === 'acme/a'))
  const narrow = await listed('narrow')
  t.same(narrow.models.map((m) => m.name), ['acme/b'], 'the narrow key sees its model loaded')
  t.same(narrow.prepared, [], 'and not acme/a\'s runtime standing by, which is not its model')
})
