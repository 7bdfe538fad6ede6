import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { ProgressWatchdog, type ProgressSource } from '../../../plugins/scheduler/progress-watchdog.js'
import { firstEvent, importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// limits.progress_timeout (config.yaml): a runtime with requests that answers nothing, or reads and generates no
// token, that long is stopped; its requests end saying so, and those in line load the model afresh.

interface PsModel { name: string, size_vram: number, details: unknown, pid?: number, active_requests?: number, queued_requests?: number }
const ps = async (url: string): Promise<PsModel[]> => ((await (await fetch(`${url}/api/ps`)).json()) as { models: PsModel[] }).models
const message = [{ role: 'user', content: 'go on' }]

/** A watchdog over a hand-made source, its verdict (or null), and how often it asked. */
function watched (source: ProgressSource, busy: () => boolean, timeoutMs = 200) {
  let verdict: string | null = null
  let asked = 0
  const counted: ProgressSource = { slotProgress: (signal) => { asked++; return source.slotProgress(signal) } }
  const stuck = new Promise<string>((resolve) => {
    const dog = new ProgressWatchdog({ source: counted, timeoutMs, busy, onStuck: (why) => { verdict = why; resolve(why) } })
    dog.start()
    t.teardown(() => dog.stop())
  })
  return { stuck, verdict: () => verdict, asked: () => asked }
}

t.test('the watchdog alone: still slots are stuck, a silent runtime is stuck, moving or idle ones are not', async (t) => {
  // The watchdog's timers do not hold a process open (a gateway exits whatever it watches); this test's must.
  const keepAlive = setInterval(() => {}, 1000)
  t.teardown(() => clearInterval(keepAlive))
  const still = watched({ slotProgress: async () => ['0:7:12:3'] }, () => true)
  t.match(await still.stuck, /^no token was read or generated for \d+ s$/, 'the same marks for the whole timeout')

  const silent = watched({ slotProgress: (signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))) }, () => true)
  t.match(await silent.stuck, /^it answered nothing for \d+ s$/, 'no answer within the timeout')

  let n = 0
  const moving = watched({ slotProgress: async () => [`0:7:12:${n++}`] }, () => true)
  const idle = watched({ slotProgress: async () => ['0:7:12:3'] }, () => false)
  const empty = watched({ slotProgress: async () => [] }, () => true)
  await until('the moving runtime to be asked over several timeouts', () => moving.asked() >= 12)
  t.equal(moving.verdict(), null, 'a slot that moves on is never stuck')
  t.equal(empty.verdict(), null, 'no busy slot (the request is between the gateway and llama-server) is not stuck')
  t.equal(idle.verdict(), null, 'an idle runtime is not stuck')
  t.equal(idle.asked(), 0, 'and is asked nothing')
})

t.test('a generation that keeps moving runs on; a runtime that stops answering is killed, its request told why, the one in line served by a fresh one', async (t) => {
  const { app, url } = await serveTinyModels(t, [], {
    limits: { progress_timeout: '2s' },
    default_options: { num_thread: 1, num_ctx: 4096, num_parallel: 1 },
    // Room for the answer that holds the slot: with 4,096 it ends when its context fills, a few seconds in on a fast run.
    models: { 'acme/long': { options: { num_ctx: 32_768 } } },
  })
  await importLongContextModel(t, app, 'acme/long')
  // The usual time of a short answer on a loaded model, to hold the one served after the stop to.
  t.equal((await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: message, max_tokens: 2 })).status, 200)
  const usualStart = Date.now()
  t.equal((await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: message, max_tokens: 2 })).status, 200)
  const usualMs = Date.now() - usualStart

  const holding = await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: message, max_tokens: 30_000, stream: true })
  t.equal(holding.status, 200)
  const stream = await firstEvent(holding)
  const [loaded] = await ps(url)
  const pid = loaded!.pid!
  t.ok(pid > 0, 'the runtime\'s pid')
  // Over two timeouts, tokens keep coming: each read is an event the runtime generated meanwhile.
  const events: string[] = []
  const started = Date.now()
  while (Date.now() - started < 4500) events.push(await stream.next())
  t.ok(events.length > 3, `${events.length} events over two timeouts`)
  t.same(events.filter((e) => e.includes('"error"')), [], 'no error event among them: a moving runtime is left alone')
  t.equal((await ps(url))[0]!.pid, pid, 'the same runtime throughout')

  const queuedAt = Date.now()
  const queued = post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: message, max_tokens: 2 })
  await until('the second request to wait in line', async () => (await ps(url))[0]?.queued_requests === 1)
  // Frozen: it keeps its sockets open and answers nothing, as a runtime stuck in its main loop does.
  process.kill(pid, 'SIGSTOP')
  t.teardown(() => { try { process.kill(pid, 'SIGKILL') } catch {} })
  const rest = await stream.rest()
  t.match(rest, /data: \{"error":\{"message":"the runtime of model \\"acme\/long\\" was stuck \(it answered nothing for 2 s\), so it was stopped; the model loads again for the next request"/, 'the stream ends with an error event saying why')
  const served = await queued
  const servedMs = Date.now() - queuedAt
  t.equal(served.status, 200, 'the request in line is answered')
  t.ok(servedMs < 2000 + 20 * usualMs + 10_000, `within the timeout, a load and its usual time (${servedMs} ms; usually ${usualMs} ms)`)
  await until('the frozen runtime to be gone', () => !isAlive(pid))
  const after = await ps(url)
  t.equal(after.length, 1, 'one runtime for the model')
  t.not(after[0]!.pid, pid, 'a fresh one')
  t.equal(after[0]!.active_requests, 0, 'no slot held')
})

t.test('limits.progress_timeout: 5 minutes by default, never 0', async (t) => {
  const { resolveConfig } = await import('../../../core/platform/config.js')
  t.equal(resolveConfig([]).limits.progressTimeoutMs, 300_000)
  t.throws(() => resolveConfig([{ source: 'test', values: { limits: { progress_timeout: 0 } } }]), /limits\.progress_timeout must be longer than 0/)
  t.throws(() => resolveConfig([{ source: 'test', values: { limits: { progress_timeout: 'soon' } } }]), /limits\.progress_timeout/)
})
