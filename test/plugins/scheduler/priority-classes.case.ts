// Priority classes on a real runtime: background work (OpenAI's `service_tier: "flex"`) runs in a free slot and
// gives it back when a person's request finds none free: the person waits for one slot's hand-back, not for the
// background answer to end. The official SDK sends a flex request that was cut (429 resource_unavailable) again, and
// gets its answer once the slot is free.
import { join } from 'node:path'
import OpenAI from 'openai'
import t from 'tap'
import { checkKeysFile, hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { streamText } from '../../helpers/stream-text.js'
import { until } from '../../helpers/until.js'

const MODEL = 'acme/long'

t.test('one slot: a person\'s request takes it back from background work; the SDK\'s flex request is retried and answered', async (t) => {
  const { app, url } = await serveTinyModels(t, [], {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 4 },
    models: { [MODEL]: { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, MODEL)
  const counts = (): { inFlight: number, queued: number } => app.scheduler.requestCounts().get(MODEL) ?? { inFlight: 0, queued: 0 }

  // Background work holding the only slot: a flex stream that would run for its whole 32k-token context.
  const bg = await post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, service_tier: 'flex', max_tokens: 32_000, messages: [{ role: 'user', content: 'go on' }] })
  t.equal(bg.status, 200)
  const background = streamText(bg)
  await background.readUntil('its first chunk', (text) => text.includes('data: {'))

  const person = await post(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(person.status, 200, 'the person is answered while the flex stream would still be running')
  t.match(await person.json(), { choices: [{ finish_reason: 'length' }], usage: { completion_tokens: 4 } })
  const cut = await background.rest()
  t.match(cut, /resource_unavailable/, 'the flex stream ended with an error event: its place was taken back')
  t.notMatch(cut, /data: \[DONE\]/, 'not as a whole answer')

  // The SDK's own retry of a 429: a non-streamed flex request cut for a person is sent again and answered.
  let sent = 0
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 5, fetch: async (input, init) => { sent++; return await fetch(input, init) } })
  const flex = client.chat.completions.create({ model: MODEL, service_tier: 'flex', max_tokens: 2000, messages: [{ role: 'user', content: 'later' }] })
  await until('the flex request running', () => counts().inFlight === 1)
  const second = await post(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi again' }] })
  t.equal(second.status, 200, 'the next person is answered too')
  await second.arrayBuffer()
  const answer = await flex
  t.equal(answer.choices[0]!.finish_reason, 'length', 'the flex request is answered whole in the end')
  t.equal(answer.usage?.completion_tokens, 2000)
  t.ok(sent >= 2, `the SDK sent it again after its 429 (${sent} times in all)`)
})

t.test('two slots: background work fills both; each person takes one back, and only one', async (t) => {
  const { app, url } = await serveTinyModels(t, [], {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 4 },
    models: { [MODEL]: { options: { num_ctx: 32_768, num_parallel: 2 } } },
  })
  await importLongContextModel(t, app, MODEL)
  const gone = new AbortController()
  t.teardown(() => gone.abort())
  const flexStream = async (content: string): Promise<ReturnType<typeof streamText>> => {
    const res = await post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, priority: 10, max_tokens: 32_000, messages: [{ role: 'user', content }] }, {}, gone.signal)
    t.equal(res.status, 200)
    const text = streamText(res)
    await text.readUntil('its first chunk', (x) => x.includes('data: {'))
    return text
  }
  // vLLM's `priority` above 0: background.
  const first = await flexStream('one')
  const second = await flexStream('two')
  const person = await post(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(person.status, 200)
  await person.arrayBuffer()
  t.match(await second.rest(), /resource_unavailable/, 'the background request seated last gave its place back')
  const still = await first.readUntil('more of the first background answer', (x) => (x.match(/data: \{/g) ?? []).length >= 3)
  t.notMatch(still, /resource_unavailable/, 'the other background request kept its place')
  await until('the first background request still holds a slot', () => app.scheduler.requestCounts().get(MODEL)?.inFlight === 1)
  gone.abort()
  await first.rest().catch(() => {})
})

t.test('free room only: a load only background work waits for never unloads a model a person used within its keep-alive', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/a', 'acme/b'], { limits: { max_loaded_models: 1, load_timeout: '3s' } })
  const chat = (model: string, extra: Record<string, unknown> = {}): Promise<Response> =>
    post(`${url}/v1/chat/completions`, { model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra })
  const ps = async (): Promise<string[]> => ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)
  t.equal((await chat('acme/a')).status, 200, 'a person uses acme/a; it stays loaded, idle, for its keep-alive')
  const flex = await chat('acme/b', { service_tier: 'flex' })
  t.equal(flex.status, 503, 'the flex request for acme/b found no free room within load_timeout')
  t.match(await flex.json(), { error: { message: /no room to load "acme\/b"/ } })
  t.same(await ps(), ['acme/a'], 'acme/a was not unloaded for background work')
  t.equal((await chat('acme/b')).status, 200, 'a person\'s request for acme/b swaps it in')
  t.same(await ps(), ['acme/b'])
})

t.test('room held only by background work: a person\'s load for another model swaps it out at once, its requests cut', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 2 },
    models: { [MODEL]: { options: { num_ctx: 32_768 } } },
    limits: { max_loaded_models: 1 },
  })
  await importLongContextModel(t, app, MODEL)
  // Background work on acme/long that would run for its whole 32k-token context, a stream and a whole answer.
  const bg = await post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, service_tier: 'flex', max_tokens: 32_000, messages: [{ role: 'user', content: 'go on' }] })
  const background = streamText(bg)
  await background.readUntil('its first chunk', (text) => text.includes('data: {'))
  const gone = new AbortController()
  t.teardown(() => gone.abort())
  let settled = false
  void post(`${url}/v1/chat/completions`, { model: MODEL, service_tier: 'flex', messages: [{ role: 'user', content: 'and on' }] }, {}, gone.signal)
    .then(() => { settled = true }, () => {})
  await until('the second in line', () => app.scheduler.requestCounts().get(MODEL)?.queued === 1)

  const person = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(person.status, 200, 'the person is answered on acme/tiny')
  await person.arrayBuffer()
  t.match(await background.rest(), /resource_unavailable/, 'the background stream was cut: its error event says so')
  const models = ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)
  t.same(models, ['acme/tiny'], 'acme/long was unloaded for the person')
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /^llamagate_model_evictions_total\{model="acme\/long",reason="background"\} 1$/m, 'the swap counted as made for background work')
  // What waited in acme/long's line waits for its next load, in free room only: acme/tiny is the person's for its keep-alive.
  t.same(app.scheduler.requestCounts().get(MODEL), { inFlight: 0, queued: 1 }, 'the background request that was in line waits for acme/long\'s next load')
  t.notOk(settled, 'unanswered')
})

t.test('a key whose class is background: its requests give their slot back without asking; another key\'s are served', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  const secrets = { nightly: 'lg-test-nightly-0123456789abcdef', alice: 'lg-test-alice-0123456789abcdefg' }
  await writeKeysFile(keysFile, {
    keys: [
      { name: 'nightly', hash: hashSecret(secrets.nightly), scopes: ['infer'], models: ['*'], limits: {}, priority: 'background', created: new Date().toISOString() },
      { name: 'alice', hash: hashSecret(secrets.alice), scopes: ['infer'], models: ['*'], limits: {}, created: new Date().toISOString() },
    ],
  })
  t.throws(() => checkKeysFile(keysFile, { keys: [{ name: 'x', hash: hashSecret('x'), priority: 'urgent' }] }), /keys\[0\] \(x\)\.priority: one of background, interactive, high/)
  const { app, url } = await serveTinyModels(t, [], {
    auth: { keys_file: keysFile },
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 4 },
    models: { [MODEL]: { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, MODEL)
  const as = (key: keyof typeof secrets): Record<string, string> => ({ authorization: `Bearer ${secrets[key]}` })
  // The nightly key asks for interactive by name, with OpenAI's `default`: it runs at its key's class all the same.
  const bulk = await post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, service_tier: 'default', max_tokens: 32_000, messages: [{ role: 'user', content: 'bulk' }] }, as('nightly'))
  t.equal(bulk.status, 200)
  const running = streamText(bulk)
  await running.readUntil('its first chunk', (text) => text.includes('data: {'))
  const alice = await post(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, as('alice'))
  t.equal(alice.status, 200, 'alice is served at once')
  await alice.arrayBuffer()
  t.match(await running.rest(), /resource_unavailable/, 'the nightly key\'s request gave its slot back')
})
