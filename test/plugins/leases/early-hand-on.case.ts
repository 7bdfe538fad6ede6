// Slots kept fed on a real runtime: while every slot is busy, up to one request per slot is handed on early to wait
// in llama-server's own queue, so that a slot that frees starts it at once. The gateway still decides who goes (turns
// by key, queue shares, one at a time so that llama-server's queue keeps the line's order), and one that leaves
// before a slot took it gives its place back and is booked nothing.
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import type { ModelEndpoint } from '../../../runtimes/index.js'
import { firstEvent, importLongContextModel, post, serveTinyModels, sseEvents } from '../../helpers/inference.js'
import { tempDir } from '../../helpers/app.js'
import { until } from '../../helpers/until.js'

const SECRETS = {
  alice: 'lg-test-alice-0123456789abcdefg', bob: 'lg-test-bob-0123456789abcdefghi',
  carol: 'lg-test-carol-0123456789abcdefg', shared: 'lg-test-shared-0123456789abcdef',
}
type Key = keyof typeof SECRETS
const as = (key: Key): Record<string, string> => ({ authorization: `Bearer ${SECRETS[key]}` })
const MODEL = 'acme/long'
/** Two slots, for the order test: it loads only when acme/long gives it room (one model at a time). */
const PAIR = 'acme/pair'

interface KeyUsage { today: { tokens: number, reserved: number }, models?: Array<{ model: string, requests: number, generated_tokens: number, runtime_ms: number }> }

t.test('slots kept fed on a real runtime', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: (Object.keys(SECRETS) as Key[]).map((name) => ({
      name, hash: hashSecret(SECRETS[name]), scopes: ['infer' as const], models: ['*'], created: new Date().toISOString(),
      limits: name === 'bob' ? { tokens_per_day: 100_000 } : name === 'shared' ? { queue_share: 0.2 } : {},
    })),
  })
  // One slot; the long model's answer holds it for as long as a test needs.
  const { app, url } = await serveTinyModels(t, [], {
    auth: { keys_file: keysFile }, limits: { queue_length: 10, max_loaded_models: 1 }, default_options: { num_ctx: 4096, num_parallel: 1 },
    models: { [MODEL]: { options: { num_ctx: 32_768 } }, [PAIR]: { options: { num_parallel: 2 } } },
  })
  await importLongContextModel(t, app, MODEL)
  await importLongContextModel(t, app, PAIR)
  const counts = (model = MODEL): { inFlight: number, queued: number } => app.scheduler.requestCounts().get(model) ?? { inFlight: 0, queued: 0 }
  // What llama-server itself holds in its queue: the requests handed on early.
  const deferred = async (): Promise<number> => {
    const runtime = app.scheduler.loadedRuntimes().find((r) => r.model === MODEL)!
    return Number(/^llamacpp:requests_deferred (\S+)$/m.exec(await runtime.endpoint.metricsText(AbortSignal.timeout(10_000)))?.[1])
  }
  const usageOf = async (key: Key): Promise<KeyUsage> => ((await (await fetch(`${url}/api/usage`, { headers: as(key) })).json()) as { keys: KeyUsage[] }).keys[0]!
  const hold = async (): Promise<{ end: () => Promise<void> }> => {
    const gone = new AbortController()
    const res = await post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, max_tokens: 32_000, messages: [{ role: 'user', content: 'go on' }] }, as('alice'), gone.signal)
    t.equal(res.status, 200)
    const streaming = await firstEvent(res)
    return { end: async () => { gone.abort(); await streaming.rest().catch(() => {}) } }
  }
  const stream = (key: Key, signal?: AbortSignal, content: string = key): Promise<Response> =>
    post(`${url}/v1/chat/completions`, { model: MODEL, stream: true, stream_options: { include_usage: true }, max_tokens: 8, messages: [{ role: 'user', content }] }, as(key), signal)

  t.test('handed on while the slot\'s answer streams; one that leaves before a slot takes it frees its place and is booked nothing', async (t) => {
    const holder = await hold()
    const bobGone = new AbortController()
    const bob = stream('bob', bobGone.signal)
    bob.catch(() => {})
    await until('bob\'s request in llama-server\'s own queue while the slot\'s answer still streams', async () => counts().queued === 1 && await deferred() === 1)
    t.equal(counts().inFlight, 1, 'the slot is still the holder\'s')
    t.ok((await usageOf('bob')).today.reserved > 0, 'bob\'s daily tokens reserved while he waits there')
    const carol = stream('carol')
    await until('carol in the gateway\'s line', () => counts().queued === 2)
    t.equal(await deferred(), 1, 'one request per slot is handed on: carol waits in the gateway\'s line')

    bobGone.abort()
    // Gone either way: before his answer's head, or after it (a wait past two seconds, as on a loaded machine, opens his
    // stream with a progress report), when the read of its body is cut.
    await t.rejects(bob.then(async (res) => await res.text()), 'bob\'s request ends with his leaving')
    await until('bob\'s reply over (his reservation returned)', async () => (await usageOf('bob')).today.reserved === 0)
    t.equal(counts().queued, 1, 'carol took his early place')
    t.match(await usageOf('bob'), { today: { tokens: 0, reserved: 0 }, totals: { requests: 0, prompt_tokens: 0, generated_tokens: 0, queue_ms: 0, runtime_ms: 0 } }, 'bob is booked nothing: no request, no tokens, no time on the runtime')
    t.notOk((await usageOf('bob')).models?.length, 'no model either')

    await holder.end()
    const answer = await carol
    t.equal(answer.status, 200)
    const events = await sseEvents(answer)
    t.equal(events.at(-1), '[DONE]', 'carol answered whole')
    t.match(events.at(-2), { usage: { completion_tokens: 8 } })
    await until('the slot free, nothing waiting anywhere', async () => counts().inFlight === 0 && counts().queued === 0 && await deferred() === 0)
    await until('carol booked', async () => (await usageOf('carol')).models?.length === 1)
    const booked = (await usageOf('carol')).models![0]!
    t.match(booked, { model: MODEL, requests: 1, generated_tokens: 8 }, 'carol is booked what she got')
    t.ok(booked.runtime_ms > 0)
  })

  t.test('turns go round the keys and a key\'s queue share counts its request handed on early', async (t) => {
    const holder = await hold()
    // The order the answers begin in: one slot takes them one at a time, each as llama-server received it. (Their ends
    // may come out of order: the next one runs while the gateway still sends the end of the one before.)
    const order: string[] = []
    const ask = (name: string, key: Key): Promise<number> => stream(key, undefined, name).then(async (res) => {
      if (res.status !== 200) { await res.arrayBuffer(); return res.status }
      const answer = await firstEvent(res)
      order.push(name)
      await answer.rest()
      return res.status
    })
    const asked: Array<Promise<number>> = []
    asked.push(ask('c1', 'shared'))
    await until('the shared key\'s first handed on', async () => counts().queued === 1 && await deferred() === 1)
    asked.push(ask('c2', 'shared'))
    await until('its second in line', () => counts().queued === 2)
    t.equal(await ask('c3', 'shared'), 429, 'a fifth of a line of 10: two waiting, the one handed on among them')
    for (const [i, name] of ['a1', 'a2', 'a3', 'a4', 'a5'].entries()) {
      asked.push(ask(name, 'alice'))
      await until(`alice's ${name} in line`, () => counts().queued === 3 + i)
    }
    asked.push(ask('b1', 'bob'))
    await until('bob\'s in line', () => counts().queued === 8)
    await holder.end()
    t.same(await Promise.all(asked), Array(8).fill(200), 'every request in line answered')
    t.comment(`begun in the order ${order.join(' ')}`)
    // c1 begins first on the slot, and c2 is handed on only once it has; but both answers are relayed and read in this
    // one process, which, starved of CPU for longer than c1's 8 tokens, may read c2's first event first (seen once).
    t.ok(order.indexOf('c1') <= 1, `the one handed on before the slot freed began first (read ${order.indexOf('c1') + 1} of 8 here)`)
    // Granted in turns c2 a1 b1 a2...: two granted a moment apart may reach llama-server either way round.
    t.ok(order.indexOf('b1') <= 4, `bob's began within the first turns (${order.indexOf('b1') + 1}), not after alice's five`)
  })

  t.test('arrival order kept: the next goes early only once those granted before it have begun', async (t) => {
    const nameOf = (payload: string): string => /"content":"(r\d)"/.exec(payload)?.[1] ?? '?'
    // Six streams wait for acme/pair's room in a known order, then take its two slots and its line in one moment.
    // Something between a grant and its sending (a plugin's hook, a large body to write) holds the first two back a
    // moment: a request handed on early meanwhile would reach llama-server's queue first and take their slots.
    const holder = await hold()
    let sendHeld!: () => void
    const held = new Promise<void>((resolve) => { sendHeld = resolve })
    let leases = 0
    // Each answer's beginning (as the gateway hears llama-server's head, sent as a slot takes a request: the clients'
    // own reads of six streams a few milliseconds apart may come in either order on a loaded machine) and end, in
    // order: a place freed by an answer that ended is taken as any free place is.
    const events: Array<{ at: 'begun' | 'ended', r: string }> = []
    const acquire = app.scheduler.acquire
    app.scheduler.acquire = async (name, request) => {
      const lease = await acquire.call(app.scheduler, name, request)
      const endpoint = lease.endpoint
      const first = leases++ < 2
      const later = async <T>(call: () => Promise<T>): Promise<T> => { if (first) await held; return await call() }
      ;(lease as { endpoint: ModelEndpoint }).endpoint = {
        post: (...args) => later(() => endpoint.post(...args)),
        postJson: <T>(path: string, body: unknown, signal: AbortSignal) => later(() => endpoint.postJson<T>(path, body, signal)),
        events: (...args) => later(() => endpoint.events(...args)),
        relay: (path, payload, sink, progress, signal) => later(() => endpoint.relay(path, payload, {
          open: () => { events.push({ at: 'begun', r: nameOf(payload) }); sink.open() },
          chunkedSocket: () => sink.chunkedSocket(),
          writeRaw: (chunk) => sink.writeRaw(chunk),
          drained: (socket) => sink.drained(socket),
          closing: () => sink.closing?.(),
          get heldBytes () { return sink.heldBytes },
        }, progress, signal).finally(() => events.push({ at: 'ended', r: nameOf(payload) }))),
      }
      return lease
    }
    t.teardown(() => { app.scheduler.acquire = acquire })
    const asked: Array<Promise<string>> = []
    for (let i = 0; i < 6; i++) {
      asked.push(post(`${url}/v1/chat/completions`, { model: PAIR, stream: true, max_tokens: 4, messages: [{ role: 'user', content: `r${i}` }] }, as('carol')).then(async (res) => {
        t.equal(res.status, 200)
        return await (await firstEvent(res)).rest()
      }))
      await until(`r${i} waiting for acme/pair's room`, () => counts(PAIR).queued === i + 1)
    }
    await holder.end()
    await until('acme/pair loaded, its two slots granted', () => counts(PAIR).inFlight === 2)
    // A round trip to that llama-server: whatever was sent with the grants has reached it.
    const runtime = app.scheduler.loadedRuntimes().find((r) => r.model === PAIR)!
    await runtime.endpoint.metricsText(AbortSignal.timeout(10_000))
    sendHeld()
    for (const answer of await Promise.all(asked)) t.ok(answer.trimEnd().endsWith('data: [DONE]'), 'answered whole')
    const order = events.filter((e) => e.at === 'begun').map((e) => e.r)
    t.comment(`begun in the order ${order.join(' ')}`)
    // Nothing handed on early begins before a request granted a place ahead of it. The two places went to r0 and r1,
    // and each answer that ends passes its place to the next in line, so with `ended` answers ended, r0 to
    // r(1 + ended) hold places; one further on was handed on early (an answer of 4 tokens may end before llama-server,
    // on a loaded machine, has read the other one granted with it: the next then takes the freed place).
    const begun = new Set<string>()
    let ended = 0
    for (const { at, r } of events) {
      if (at === 'ended') { ended++; continue }
      const i = Number(r.slice(1))
      const placed = 2 + ended
      const passed = i < placed ? [] : Array.from({ length: placed }, (_, j) => `r${j}`).filter((ahead) => !begun.has(ahead))
      t.same(passed, [], `${r} began ${i < placed ? 'on a place of its own' : 'handed on early, after every request placed ahead of it'}`)
      begun.add(r)
    }
    t.equal(begun.size, 6, 'all six began')
    // Two granted a moment apart (a place each) may begin either way round; none passes two ahead of it.
    for (let i = 2; i < 6; i++) t.ok(order.indexOf(`r${i}`) >= Math.min(order.indexOf(`r${i - 1}`), order.indexOf(`r${i - 2}`)), `r${i} did not begin before the two ahead of it`)
  })
})
