import { getEventListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { importLongContextModel, post, serveTinyModels, sharedServer, sseEvents } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

type Ps = { models: Array<Record<string, any>> }
const ps = async (url: string): Promise<Ps> => (await fetch(`${url}/api/ps`)).json() as Promise<Ps>

/**
 * Counts the requests that asked the scheduler for a slot. Each is in the instance's line (given a slot at once, or
 * queued for one) a few microtasks later, before a request sent once the count has moved can reach the gateway.
 */
function countArrivals (t: Test, scheduler: FastifyInstance['scheduler']): () => number {
  let arrived = 0
  const acquire = scheduler.acquire
  scheduler.acquire = (name, request) => {
    arrived++
    return acquire.call(scheduler, name, request)
  }
  t.teardown(() => { scheduler.acquire = acquire })
  return () => arrived
}

/** Reads a streamed response until its first data event, then returns the reader to continue. */
async function firstEvent (res: Response): Promise<{ text: string, rest: () => Promise<string> }> {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  // Progress comments (`: waiting ...`) of a request that waited for the load come first: read past them.
  while (!text.includes('data: ') || !text.includes('\n\n', text.indexOf('data: '))) {
    const { value, done } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
  }
  return {
    text,
    rest: async () => {
      let more = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return more
        more += decoder.decode(value, { stream: true })
      }
    },
  }
}

// One gateway per configuration, shared by the tests that need no fresh one, in an order where each finds its
// server as it needs it. Closing an app stops every llama-server of the process: the tests on these come first,
// those with an app of their own after them.
const tiny = sharedServer(() => serveTinyModels(t))
const longAnswers = sharedServer(() => serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 4096 } }))
/** One slot and one queue place; acme/long is trained for a long context (its answers may run for minutes). */
const oneSlot = sharedServer(async () => {
  const server = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_parallel: 1, num_ctx: 2048 }, limits: { queue_length: 1 } })
  await importLongContextModel(t, server.app, 'acme/long')
  return server
})
const roomForOne = sharedServer(() => serveTinyModels(t, ['acme/a', 'acme/b'], { limits: { max_loaded_models: 1 } }))

t.test('16 concurrent streams on num_parallel 2 all complete, served in order of arrival', async (t) => {
  const { app, url } = await tiny() // num_parallel 2
  await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [] }) // loaded before the race starts
  const arrivals = countArrivals(t, app.scheduler)
  const firstTokenAt: number[] = []
  const runs = []
  for (let i = 0; i < 16; i++) {
    runs.push((async () => {
      const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: `n${i}` }], options: { max_tokens: 24 } })
      const first = await firstEvent(res)
      firstTokenAt[i] = performance.now()
      const all = first.text + await first.rest()
      return all
    })())
    // A defined order of arrival: the next request is sent once this one is in the scheduler's line.
    await until(`request ${i} to reach the scheduler`, () => arrivals() === i + 1, 30_000, 2)
  }
  const bodies = await Promise.all(runs)
  for (const [i, body] of bodies.entries()) {
    const last = JSON.parse(body.trim().split('\n\n').at(-1)!.slice(6))
    t.equal(last.done, true, `stream ${i} completed`)
    t.equal(last.eval_count, 24, `stream ${i} generated all its tokens`)
  }
  // With two slots, request i can only start once one of the two before it in line has finished.
  for (let i = 2; i < 16; i++) {
    t.ok(firstTokenAt[i]! >= Math.min(firstTokenAt[i - 1]!, firstTokenAt[i - 2]!), `request ${i} did not start before the ones ahead of it`)
  }
})

t.test('requests leave nothing on the instance they ran on: its signal has no listener once they are done', async (t) => {
  // Every lease follows the instance's signal (a stop or a crash ends the request); a model stays loaded for
  // weeks, so what a request hangs on that signal must come off when the request ends (core/base/linked-signal.ts).
  const { app, url } = await tiny()
  // A lease taken without a client signal of its own carries the instance's signal itself.
  const probe = await app.scheduler.acquire('acme/tiny')
  const instanceSignal = probe.signal
  probe.release()
  const streams = Array.from({ length: 6 }, (_, i) => post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, messages: [{ role: 'user', content: `s${i}` }], max_tokens: 4 }).then(sseEvents))
  const whole = Array.from({ length: 3 }, (_, i) => post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: `w${i}` }], options: { max_tokens: 4 } }).then((r) => r.json()))
  const controller = new AbortController()
  const cut = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 2000 } }, {}, controller.signal)
  await firstEvent(cut)
  t.ok(getEventListeners(instanceSignal, 'abort').length > 0, 'while a request runs, it follows the instance')
  controller.abort()
  for (const events of await Promise.all(streams)) t.equal(events.at(-1), '[DONE]')
  for (const body of await Promise.all(whole) as Array<Record<string, unknown>>) t.equal(body.done, true)
  await until('the cut request to be released', () => app.scheduler.requestCounts().get('acme/tiny')?.inFlight === 0)
  t.equal(getEventListeners(instanceSignal, 'abort').length, 0, 'and nothing stays on it after')
  t.same(app.scheduler.snapshot().map((m) => m.state), ['loaded'], 'the one instance they all ran on is still loaded')
})

t.test('keep_alive: 0 unloads after the request; 2 s unloads on time, not before', async (t) => {
  const { url } = await tiny()
  await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, keep_alive: 0, options: { max_tokens: 2 } })
  await until('unloaded after keep_alive 0', async () => (await ps(url)).models.length === 0, 10_000)
  t.pass('keep_alive 0 unloaded the model')
  const sent = Date.now()
  await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, keep_alive: '2s', options: { max_tokens: 2 } })
  const loaded = (await ps(url)).models[0]!
  const looked = Date.now()
  const expires = Date.parse(loaded.expires_at)
  // The keep-alive counts from the end of the request, which lies between its sending and this look.
  t.ok(expires >= sent + 2000 && expires <= looked + 2000, `expires_at is 2 s after the request ended (${expires - sent} ms after it was sent, ${looked - sent} ms taken)`)
  const pid = loaded.pid as number
  let early: number | null = null
  while (Date.now() < expires - 250) {
    if ((await ps(url)).models.length !== 1) { early = expires - Date.now(); break }
    await sleep(50)
  }
  t.equal(early, null, 'still loaded until shortly before its time')
  await until('unloaded after its keep-alive', async () => (await ps(url)).models.length === 0, 15_000)
  t.ok(Date.now() >= expires, 'unloaded at its time, not before')
  await until('the process is gone', () => !isAlive(pid), 15_000)
  t.pass('the process exited')
})

t.test('a request with another num_ctx gets a new instance once the old one drains', async (t) => {
  const { url } = await tiny() // num_ctx 512
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], options: { max_tokens: 400 } })
  const first = await firstEvent(res)
  const oldPid = (await ps(url)).models[0]!.pid
  const other = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'y' }], options: { num_ctx: 1024, max_tokens: 2 } })
  t.equal(other.status, 200)
  const rest = await first.rest()
  t.match(rest, /"done":true/, 'the first request finished on its own instance, not cut')
  await until('only the new instance is left', async () => (await ps(url)).models.length === 1 && (await ps(url)).models[0]!.pid !== oldPid)
  t.equal((await ps(url)).models[0]!.context_length, 1024)
})

t.test('/api/stop during a stream ends it with an error event and unloads', async (t) => {
  const { url } = await longAnswers()
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], options: { max_tokens: 4000 } })
  const first = await firstEvent(res)
  const pid = (await ps(url)).models[0]!.pid as number
  const stop = await post(`${url}/api/stop`, { model: 'acme/tiny' })
  t.same(await stop.json(), { status: 'stopped' })
  const last = JSON.parse((first.text + await first.rest()).trim().split('\n\n').at(-1)!.slice(6))
  t.match(last.error, /model "acme\/tiny" was stopped/)
  t.same((await ps(url)).models, [])
  t.notOk(isAlive(pid), 'the runtime process is gone')
  const again = await post(`${url}/api/stop`, { model: 'acme/tiny' })
  t.same(await again.json(), { status: 'stopped' }, 'stopping an unloaded model is fine')
  const unknown = await post(`${url}/api/stop`, { model: 'acme/nope' })
  t.equal(unknown.status, 404)
})

t.test('a runtime killed mid-stream ends the stream with an error event; the next request works', async (t) => {
  const { url } = await longAnswers()
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }], options: { max_tokens: 4000 } })
  const first = await firstEvent(res)
  const pid = (await ps(url)).models[0]!.pid as number
  process.kill(pid, 'SIGKILL')
  const rest = await first.rest()
  const last = JSON.parse(rest.trim().split('\n\n').at(-1)!.slice(6))
  t.match(last.error, /runtime of model "acme\/tiny" was killed by SIGKILL/)
  await until('the dead instance is dropped', async () => (await ps(url)).models.length === 0)
  const next = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'again' }], options: { max_tokens: 3 } })
  t.equal(next.status, 200)
  t.equal((await next.json() as any).eval_count, 3)
  const v1 = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', stream: true, messages: [{ role: 'user', content: 'x' }], max_tokens: 4000 })
  const firstV1 = await firstEvent(v1)
  process.kill((await ps(url)).models[0]!.pid, 'SIGKILL')
  const restV1 = firstV1.text + await firstV1.rest()
  const lastV1 = JSON.parse(restV1.trim().split('\n\n').at(-1)!.slice(6))
  t.match(lastV1.error.message, /killed by SIGKILL/, 'OpenAI shape on /v1')
  t.notMatch(restV1, /\[DONE\]/)
})

t.test('a full queue answers 503 with Retry-After', async (t) => {
  const { app, url } = await oneSlot()
  const long = { model: 'acme/tiny', messages: [{ role: 'user', content: 'long' }], options: { max_tokens: 1500 } }
  const controller = new AbortController()
  const running = await post(`${url}/api/chat`, long, {}, controller.signal)
  await firstEvent(running) // holds the only slot
  const queued = post(`${url}/api/chat`, { ...long, options: { max_tokens: 2 } }) // waits in the one queue place
  await until('the second request to wait in the queue', () => app.scheduler.snapshot()[0]?.queuedRequests === 1)
  const refused = await post(`${url}/api/chat`, long)
  t.equal(refused.status, 503)
  t.equal(refused.headers.get('retry-after'), '1')
  t.match((await refused.json() as { error: string }).error, /request queue for "acme\/tiny" is full/)
  const refusedV1 = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }] })
  t.equal(refusedV1.status, 503)
  t.equal((await refusedV1.json() as any).error.type, 'server_error')
  // Cut rather than read to its end: the slot frees either way.
  controller.abort()
  t.equal((await queued).status, 200, 'the queued request was served')
})

t.test('a client that disconnects frees its slot at once', async (t) => {
  // llama-server checks for a gone client once a second (HTTP_POLLING_SECONDS) while it waits on a slot's
  // results (1,040 ms was seen). The generation cut is of 8,000 tokens on a model whose training context lets
  // it run (the default tiny model's 2,048 would end it after a few seconds): on one thread, a minute or more,
  // each token dearer than the last. 10 s tells "freed at once" from "freed when it ended" on a loaded machine.
  const { url } = await oneSlot()
  const options = { num_ctx: 8192 }
  const controller = new AbortController()
  const res = await post(`${url}/api/chat`, { model: 'acme/long', messages: [{ role: 'user', content: 'go on' }], options: { ...options, max_tokens: 8000 } }, {}, controller.signal)
  await firstEvent(res)
  controller.abort()
  const started = performance.now()
  const next = await post(`${url}/api/chat`, { model: 'acme/long', messages: [{ role: 'user', content: 'next' }], options: { ...options, max_tokens: 3 } })
  await firstEvent(next)
  const waited = performance.now() - started
  t.ok(waited < 10_000, `the next request started generating within 10 s (took ${Math.round(waited)} ms)`)
})

t.test('a switch at max_loaded_models evicts at once: no free-memory probe first, the idle runtime killed, not waited for', async (t) => {
  // On a GPU the free memory is an nvidia-smi run: tens of milliseconds on every switch, for an answer that
  // changes nothing when the model count alone says one must go.
  const { app, url } = await roomForOne()
  const order: string[] = []
  const freeMemory = app.runtimes.freeMemory.bind(app.runtimes)
  app.runtimes.freeMemory = async () => { order.push('free memory asked'); return freeMemory() }
  app.scheduler.events.on('evicted', (name) => order.push(`${name} evicted`))
  const exits: Array<string | null> = []
  // An idle llama-server has nothing to finish: SIGKILL tears it down in half SIGTERM's time (1B model: ~60 ms, not ~120).
  const create = app.launcher.create.bind(app.launcher)
  app.launcher.create = (options) => {
    const server = create(options)
    if (options.alias === 'acme/a') server.onExit((info) => exits.push(info.signal))
    return server
  }
  t.teardown(() => {
    app.runtimes.freeMemory = freeMemory
    app.launcher.create = create
  })
  await post(`${url}/api/chat`, { model: 'acme/a', stream: false, messages: [], options: { max_tokens: 1 } })
  order.length = 0
  t.equal((await post(`${url}/api/chat`, { model: 'acme/b', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 1 } })).status, 200)
  t.equal(order[0], 'acme/a evicted', `the eviction came first: ${order.join(', ')}`)
  t.same(exits, ['SIGKILL'], 'acme/a\'s runtime was killed at once')
  t.same((await ps(url)).models.map((m) => m.name), ['acme/b'])
})

t.test('a busy model is never cut to make room: the new load waits', async (t) => {
  const { url } = await roomForOne()
  const res = await post(`${url}/api/chat`, { model: 'acme/a', messages: [{ role: 'user', content: 'x' }], options: { num_ctx: 4096, max_tokens: 1500 } })
  const first = await firstEvent(res)
  const waiting = post(`${url}/api/chat`, { model: 'acme/b', stream: false, messages: [{ role: 'user', content: 'y' }], options: { num_ctx: 4096, max_tokens: 2 } })
  const rest = await first.rest()
  t.match(rest, /"done":true/, 'the running generation finished')
  t.notMatch(rest, /"error"/)
  t.equal((await waiting).status, 200, 'the other model loaded after')
})

t.test('a third model past max_loaded_models 2 evicts the least recently used idle one', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/a', 'acme/b', 'acme/c'], { limits: { max_loaded_models: 2 } })
  for (const model of ['acme/a', 'acme/b']) await post(`${url}/api/chat`, { model, messages: [] })
  await post(`${url}/api/chat`, { model: 'acme/a', stream: false, messages: [{ role: 'user', content: 'use a again' }], options: { max_tokens: 2 } })
  await post(`${url}/api/chat`, { model: 'acme/c', messages: [] })
  const names = (await ps(url)).models.map((m) => m.name).sort()
  t.same(names, ['acme/a', 'acme/c'], 'b, the least recently used, was unloaded')
})

t.test('a model that fails to start: 502 with the runtime\'s words, then a growing delay, not a tight loop', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const { truncate } = await import('node:fs/promises')
  const record = app.store.get('acme/tiny')
  const path = app.store.ggufPath(record)!
  // A header that reads fine with tensor data cut short: the import accepts it, llama-server does not.
  await truncate(path, Math.floor(record.size / 2))
  // Not streamed: a stream that waits for a load has its head out already, and ends with an error event instead.
  const first = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'x' }] })
  t.equal(first.status, 502)
  const firstError = (await first.json() as { error: string }).error
  t.match(firstError, /model "acme\/tiny" failed to start: llama-server exited during start-up/)
  t.match(firstError, /load|tensor|file/i, 'with llama-server\'s reason')
  const second = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'x' }] })
  t.equal(second.status, 502)
  const body = await second.json() as any
  t.match(body.error.message, /failed to start (with these load options )?1 time\(s\); next try in 1 s/)
  t.equal(body.error.type, 'server_error')
  t.same((await ps(url)).models, [], 'nothing is left loading')
})

t.test('num_thread (Ollama\'s option) starts llama-server with --threads; unset, llama-server picks', async (t) => {
  // The one test that leaves llama-server its default threads: the helper's num_thread 1 is unset here.
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_thread: undefined } })
  const cmdline = async (): Promise<string[]> => {
    const { readFile } = await import('node:fs/promises')
    return (await readFile(`/proc/${(await ps(url)).models[0]!.pid}/cmdline`, 'utf8')).split('\0')
  }
  t.equal((await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, options: { max_tokens: 2 } })).status, 200)
  t.notOk((await cmdline()).includes('--threads'), 'no --threads when the option is unset')
  const res = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, options: { max_tokens: 2, num_thread: 1 } })
  t.equal(res.status, 200)
  await until('the instance with one thread is the only one', async () => (await ps(url)).models.length === 1 && (await cmdline()).includes('--threads'))
  const args = await cmdline()
  t.equal(args[args.indexOf('--threads') + 1], '1')
  const bad = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, options: { num_thread: 0 } })
  t.equal(bad.status, 400)
  t.match(await bad.text(), /num_thread/)
})

t.test('runtimes listen on Unix sockets in a folder only this user can enter, removed when the gateway closes', async (t) => {
  const { readFile, stat } = await import('node:fs/promises')
  const { dirname } = await import('node:path')
  const { app, url } = await serveTinyModels(t)
  t.equal((await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'a', stream: false, options: { max_tokens: 2 } })).status, 200)
  const args = (await readFile(`/proc/${(await ps(url)).models[0]!.pid}/cmdline`, 'utf8')).split('\0')
  const host = args[args.indexOf('--host') + 1]!
  t.match(host, /\/\d+\.sock$/)
  t.equal((await stat(dirname(host))).mode & 0o777, 0o700)
  await app.close()
  await t.rejects(stat(dirname(host)), { code: 'ENOENT' }, 'the socket folder is gone')
})
