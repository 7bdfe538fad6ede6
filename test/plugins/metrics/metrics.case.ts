import { connect } from 'node:net'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from '@platformatic/promotel'
import t, { type Test } from 'tap'
import { freePort } from '../../../runtimes/process/free-port.js'
import { build } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { firstEvent, post, serveTinyModels, sharedServer, sseEvents } from '../../helpers/inference.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'
import { checkpoint, realConverter, skipUnlessReady } from '../convert/fixtures.js'

/** One sample of a scrape: the full series name (a histogram's with its _bucket, _sum or _count) and its labels. */
interface Sample { name: string, labels: Record<string, string>, value: number }

/**
 * GETs /metrics and parses it with a Prometheus text-format parser. Every sample line must come out as one series
 * of one sample: a line the parser could not read, or a series written twice, fails here.
 */
async function scrape (t: Test, url: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`, { headers })
  t.equal(res.status, 200, 'GET /metrics answers 200')
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await res.text()
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'))
  const valueOf = (line: string): string => {
    const labelsEnd = line.lastIndexOf('}')
    return (labelsEnd === -1 ? line.slice(line.search(/\s/)) : line.slice(labelsEnd + 1)).trim().split(/\s+/)[0] ?? ''
  }
  const runtimeNonFinite = lines.filter((l) => l.startsWith('llamacpp:') && /^[+-]?(nan|inf)$/i.test(valueOf(l)) && !/^(NaN|[+-]Inf)$/.test(valueOf(l)))
  t.same(runtimeNonFinite, [], 'llama-server\'s non-finite values (it prints nan, -nan, inf) spelled NaN, +Inf, -Inf')
  // The parser leaves out samples whose value is not finite (prom-client's idle event-loop lag is "Nan"): not counted.
  const written = lines.filter((l) => !/^[+-]?(nan|inf|infinity)$/i.test(valueOf(l))).length
  const samples: Sample[] = []
  for (const series of parse(text).timeseries ?? []) {
    const labels: Record<string, string> = {}
    for (const { name, value } of series.labels ?? []) labels[name!] = value!
    const { __metric_name: family, __suffix: suffix, ...own } = labels
    if (series.samples?.length !== 1) t.fail(`${family}${JSON.stringify(own)} appears ${series.samples?.length} times`)
    samples.push({ name: suffix ? `${family}_${suffix}` : family!, labels: own, value: Number(series.samples![0]!.value) })
  }
  t.equal(samples.length, written, 'every sample line was parsed')
  return samples
}

/** The value of the series with exactly these labels; 0 when it is not there (a counter never incremented). */
function value (samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const wanted = JSON.stringify(Object.entries(labels).sort())
  return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).filter(([k]) => k !== 'le').sort()) === wanted && !('le' in s.labels))?.value ?? 0
}

function has (samples: Sample[], name: string, labels: Record<string, string>): boolean {
  return samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
}

const TINY = { model: 'acme/tiny' }

// One gateway and llama-server for the two tests that take the defaults, the counting one first (it counts from a
// fresh start). Closing an app stops every llama-server of the process: the tests with an app of their own come after.
const tiny = sharedServer(() => serveTinyModels(t))

t.test('requests, tokens and loads are counted, and the runtime\'s own series come with a model label', async (t) => {
  const { url } = await tiny()
  const before = await scrape(t, url)
  t.ok(has(before, 'llamagate_models_loaded', TINY) && value(before, 'llamagate_models_loaded', TINY) === 0, 'a stored model not loaded shows 0')
  t.ok(has(before, 'llamagate_requests_queued', TINY), 'and its queue, empty')
  t.notOk(before.some((s) => s.name.startsWith('llamacpp:')), 'no runtime runs yet')

  const messages = [{ role: 'user', content: 'hello' }]
  const whole = await (await post(`${url}/api/chat`, { ...TINY, messages, stream: false, options: { max_tokens: 5 } })).json() as any
  const streamed = (await sseEvents(await post(`${url}/api/chat`, { ...TINY, messages, options: { max_tokens: 7 } }))).at(-1) as any
  const openai = await (await post(`${url}/v1/chat/completions`, { ...TINY, messages, max_tokens: 6 })).json() as any
  const openaiStream = (await sseEvents(await post(`${url}/v1/chat/completions`, { ...TINY, messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } }))).at(-2) as any
  const missing = await post(`${url}/api/chat`, { model: 'acme/missing', messages })
  t.equal(missing.status, 404)
  const prompt = whole.prompt_eval_count + streamed.prompt_eval_count + openai.usage.prompt_tokens + openaiStream.usage.prompt_tokens
  const generated = whole.eval_count + streamed.eval_count + openai.usage.completion_tokens + openaiStream.usage.completion_tokens
  t.equal(generated, 5 + 7 + 6 + 4, 'the answers reported what was asked')

  const after = await scrape(t, url)
  const moved = (name: string, labels: Record<string, string>): number => value(after, name, labels) - value(before, name, labels)
  t.equal(moved('llamagate_requests_total', { surface: 'native', model: 'acme/tiny', status: '200' }), 2, 'two native chats')
  t.equal(moved('llamagate_requests_total', { surface: 'openai', model: 'acme/tiny', status: '200' }), 2, 'two OpenAI chats')
  t.equal(moved('llamagate_requests_total', { surface: 'native', model: '', status: '404' }), 1, 'the missing model: a 404 without a series of its own')
  t.notOk(has(after, 'llamagate_requests_total', { model: 'acme/missing' }), 'no label for a name nobody stored')
  t.equal(moved('llamagate_request_duration_seconds_count', { surface: 'openai', model: 'acme/tiny' }), 2, 'a duration for each')
  t.equal(moved('llamagate_prompt_tokens_total', TINY), prompt, 'prompt tokens: the sum of what the answers reported')
  t.equal(moved('llamagate_generated_tokens_total', TINY), generated, 'generated tokens: the sum of what the answers reported')
  t.equal(value(after, 'llamagate_time_to_first_token_seconds_count', TINY), 2, 'a first token for each streamed answer')
  t.ok(value(after, 'llamagate_time_to_first_token_seconds_sum', TINY) > 0, 'time to first token observed')
  t.equal(value(after, 'llamagate_model_load_duration_seconds_count', TINY), 1, 'one load')
  t.ok(value(after, 'llamagate_model_load_duration_seconds_sum', TINY) > 0, 'its time observed')
  t.equal(value(after, 'llamagate_models_loaded', TINY), 1, 'loaded now')
  t.equal(value(after, 'llamagate_requests_in_flight', TINY), 0, 'nothing in flight')
  t.equal(value(after, 'llamagate_requests_queued', TINY), 0, 'nothing queued')
  t.ok(has(after, 'llamagate_kv_cache_usage_ratio', TINY), 'the KV-cache use of a loaded model is there')
  t.equal(value(after, 'llamagate_kv_cache_usage_ratio', TINY), 0, 'idle: no context held by a request')
  t.equal(value(after, 'llamagate_runtime_scrape_failures_total', TINY), 0, 'the runtime answered')

  const runtime = { model: 'acme/tiny', purpose: 'generate' }
  t.ok(has(after, 'llamacpp:prompt_tokens_total', runtime), 'llama-server\'s own series, with the model')
  t.equal(value(after, 'llamacpp:tokens_predicted_total', runtime), generated, 'llama-server counted the same tokens')
  t.equal(value(after, 'llamacpp:prompt_tokens_total', runtime) + value(after, 'llamacpp:prompt_tokens_cached_total', runtime), prompt, 'and the same prompts, cached or not')
  t.ok(has(after, 'llamacpp:requests_deferred', runtime), 'llama-server\'s own queue')
  t.ok(after.filter((s) => s.name.startsWith('llamacpp:')).every((s) => s.labels.model === 'acme/tiny'), 'every llama-server series has the label')
})

t.test('a runtime that does not answer is left out and counted; the rest of /metrics still comes', async (t) => {
  const { app, url } = await tiny()
  await post(`${url}/api/generate`, { ...TINY, prompt: '' })
  const pid = app.scheduler.snapshot()[0]!.pid!
  process.kill(pid, 'SIGSTOP')
  t.teardown(() => { try { process.kill(pid, 'SIGCONT') } catch {} })
  const stopped = await scrape(t, url)
  process.kill(pid, 'SIGCONT')
  t.equal(value(stopped, 'llamagate_runtime_scrape_failures_total', TINY), 1, 'one failure counted')
  t.notOk(stopped.some((s) => s.name.startsWith('llamacpp:')), 'no series from it')
  t.notOk(has(stopped, 'llamagate_kv_cache_usage_ratio', TINY), 'its KV-cache use is unknown, not 0')
  t.equal(value(stopped, 'llamagate_models_loaded', TINY), 1, 'the gateway\'s own metrics are all there')
  const resumed = await scrape(t, url)
  t.ok(has(resumed, 'llamacpp:prompt_tokens_total', TINY), 'back once it answers')
})

t.test('a streamed generation in progress: in flight, and its context in use', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'], { default_options: { num_ctx: 2048, num_parallel: 1 } })
  const controller = new AbortController()
  const res = await post(`${url}/api/chat`, { ...TINY, messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 2000 } }, {}, controller.signal)
  const stream = await firstEvent(res)
  await stream.next()
  const during = await scrape(t, url)
  controller.abort()
  await stream.rest().catch(() => {})
  t.equal(value(during, 'llamagate_requests_in_flight', TINY), 1, 'one request in flight')
  const ratio = value(during, 'llamagate_kv_cache_usage_ratio', TINY)
  t.ok(ratio > 0 && ratio < 1, `part of the context is held (${ratio})`)
  t.equal(value(during, 'llamacpp:requests_processing', { model: 'acme/tiny', purpose: 'generate' }), 1, 'llama-server says the same')
})

t.test('with API keys, /metrics needs one like every other route', async (t) => {
  const app = await build(t, { auth: { api_keys: ['secret'] } })
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401, 'no key: 401')
  t.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode, 401, 'a wrong key: 401')
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer secret' } })
  t.equal(res.statusCode, 200, 'the key: 200')
  t.match(res.body, /^# HELP llamagate_requests_total /m)
})

t.test('metrics.listen: /metrics on its own address, without a key, and not on the main one', async (t) => {
  const port = await freePort()
  const app = await build(t, { auth: { api_keys: ['secret'] }, metrics: { listen: `127.0.0.1:${port}` } })
  const main = await app.listen({ host: '127.0.0.1', port: 0 })
  t.equal((await fetch(`${main}/metrics`, { headers: { authorization: 'Bearer secret' } })).status, 404, 'not on the main address')
  const samples = await scrape(t, `http://127.0.0.1:${port}`)
  t.equal(value(samples, 'llamagate_requests_total', { surface: 'other', model: '', status: '404' }), 1, 'the main address\'s requests are counted')
  t.ok(app.startupNotes.includes(`metrics on http://127.0.0.1:${port}/metrics`), 'the start-up log says where')
  // fetch sets Host itself: a raw request sends the one a rebinding page's browser would.
  const rebound = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk: Buffer) => { answer += chunk.toString('utf8') })
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
    socket.write('GET /metrics HTTP/1.1\r\nHost: evil.example:8080\r\nConnection: close\r\n\r\n')
  })
  t.match(rebound, /^HTTP\/1\.1 403 /, 'a foreign Host is refused on the metrics listener too')
  t.notMatch(rebound, /llamagate_/, 'with no series in the answer')
  await app.close()
  await t.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'the listener closes with the app')
})

t.test('metrics.enabled false: no /metrics', async (t) => {
  const app = await build(t, { metrics: { enabled: false } })
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
})

const noConverter = skipUnlessReady(t, await (await realConverter(t)).readiness())

t.test('a conversion that succeeds is timed', { skip: noConverter }, async (t) => {
  const dir = await checkpoint(t)
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/tiny-hf', { files: await Promise.all((await readdir(dir)).map(async (f) => ({ path: f, content: await readFile(join(dir, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' }))) })
  // The runtime build names the llama.cpp tree whose converter runs.
  const { url } = await serveTinyModels(t, [], { hub: { endpoint: fake.url } })
  t.equal((await post(`${url}/api/pull`, { model: 'acme/tiny-hf', stream: false })).status, 200)
  const samples = await scrape(t, url)
  t.equal(value(samples, 'llamagate_conversion_duration_seconds_count', { dtype: 'f16' }), 1, 'one f16 conversion')
  t.ok(value(samples, 'llamagate_conversion_duration_seconds_sum', { dtype: 'f16' }) > 0, 'its time observed')
  t.equal(value(samples, 'llamagate_conversion_failures_total', { dtype: 'f16' }), 0, 'no failure')
})

t.test('pulls and conversions: bytes, retries and failures', async (t) => {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/tiny-GGUF', { files: [{ path: 'tiny-Q4_K_M.gguf', content: await tinyGgufBytes(t, 1) }] })
  // Not a real checkpoint: downloaded whole, then refused by the converter's checks (no converter needed for that).
  fake.addRepo('acme/tiny-st', { files: [
    { path: 'config.json', content: Buffer.from('{"architectures":["LlamaForCausalLM"]}'), lfs: false },
    { path: 'model.safetensors', content: Buffer.alloc(20_000, 7) },
    { path: 'tokenizer.model', content: Buffer.alloc(1000, 1) },
  ] })
  const app = await build(t, { hub: { endpoint: fake.url, token: null } })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const before = await scrape(t, url)

  // Two dropped downloads (resumed) and one 503 from the hub's API: three retries.
  fake.faults = { dropAfterBytes: 100_000, drops: 2, serverErrors: 1 }
  const ok = await post(`${url}/api/pull`, { model: 'acme/tiny-GGUF', stream: false })
  t.equal(ok.status, 200)
  fake.faults = {}
  const failed = await post(`${url}/api/pull`, { model: 'acme/tiny-st', stream: false })
  t.equal(failed.status, 422, 'the conversion failed')

  const after = await scrape(t, url)
  const moved = (name: string, labels: Record<string, string> = {}): number => value(after, name, labels) - value(before, name, labels)
  const sizes = ['acme/tiny-GGUF', 'acme/tiny-st'].flatMap((m) => app.store.get(m).manifest.files.map((f) => f.size))
  t.equal(moved('llamagate_pull_bytes_total'), sizes.reduce((a, b) => a + b, 0), 'every byte of both models, each once')
  t.equal(moved('llamagate_pull_retries_total'), 3, 'two drops and a 503')
  t.equal(moved('llamagate_pull_failures_total'), 1, 'the pull whose conversion failed')
  t.equal(moved('llamagate_conversion_failures_total', { dtype: 'f16' }), 1, 'the conversion\'s failure')
  t.equal(moved('llamagate_conversion_duration_seconds_count', { dtype: 'f16' }), 0, 'nothing was made')
  t.equal(moved('llamagate_requests_total', { surface: 'native', model: 'acme/tiny-GGUF', status: '200' }), 1, 'the pull of a model now stored has its label')
})
