import t from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

const ASK = { role: 'user', content: 'hi' }

async function chat (url: string, options: Record<string, unknown> = {}): Promise<{ status: number, body: any, ms: number }> {
  const started = Date.now()
  const res = await post(`${url}/api/chat`, { model: 'acme/chat', stream: false, messages: [ASK], options: { num_predict: 2, ...options } })
  return { status: res.status, body: await res.json(), ms: Date.now() - started }
}

// One gateway and its instance for both tests: the first leaves it as it found it (one instance, serving).
const chatModel = sharedServer(() => serveRealisticModels(t, { 'acme/chat': 'qwen25' }))

async function loaded (url: string): Promise<Array<{ pid: number, context_length: number }>> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as any).models
}

t.test('a bad num_ctx fails alone, before anything starts; every other request answers at once', async (t) => {
  const { url } = await chatModel()
  const first = await chat(url)
  t.equal(first.status, 200, 'the model serves')
  const [before] = await loaded(url)

  const huge = await chat(url, { num_ctx: 100_000_000 })
  t.equal(huge.status, 400, 'refused up front: the KV cache cannot fit')
  t.match(huge.body.error, /^options num_ctx 100000000 × num_parallel 1 need a KV cache of [\d.]+ GiB \(cache types f16\/f16\), more than the [\d.]+ (GiB|MiB) of memory this model could have .*lower num_ctx \(the model was trained with 4096\) or num_parallel$/)
  t.same((await loaded(url)).map((m) => m.pid), [before!.pid], 'nothing was started, nothing was unloaded')

  const after = await chat(url)
  t.equal(after.status, 200, 'the next request answers')
  t.ok(after.ms < 10_000, `at once, on the instance that kept serving (${after.ms} ms)`)
  t.same((await loaded(url)).map((m) => m.pid), [before!.pid], 'the same llama-server')
})

t.test('options llama-server cannot start with: that request fails and backs off alone; others are not held back', async (t) => {
  const { url } = await chatModel()
  t.equal((await chat(url)).status, 200)
  const [serving] = await loaded(url)

  // This build cannot make a quantized V cache without flash attention: llama-server exits at start.
  const bad = await chat(url, { cache_type_v: 'q4_0' })
  t.equal(bad.status, 502)
  t.match(bad.body.error, /model "acme\/chat" failed to start: llama-server exited during start-up.*failed to create/)
  t.same((await loaded(url)).map((m) => m.pid), [serving!.pid], 'the instance that serves everyone else was left alone')

  const again = await chat(url, { cache_type_v: 'q4_0' })
  t.equal(again.status, 502, 'the same bad options again, within the back-off')
  t.match(again.body.error, /^model "acme\/chat" failed to start with these load options 1 time\(s\); next try in \d+ s\. Last error: /, 'are held back')

  const good = await chat(url)
  t.equal(good.status, 200, 'a request with the model\'s own options is not held back by that failure')
  t.ok(good.ms < 10_000, `and answers at once (${good.ms} ms)`)
  const other = await chat(url, { num_ctx: 512 })
  t.equal(other.status, 200, 'nor is one with other good load options, which starts its own instance')
  t.equal((await chat(url)).status, 200, 'and the model\'s own options still answer')
})
