import t from 'tap'
import { listUpstreamModels } from '../../../plugins/upstreams/upstream-client.js'
import { fakeUpstream, json, upstream } from './fake-upstream.js'

// Reading an upstream's model list: where each kind keeps it, its key, the `models` filter, and what a failure says.

const never = new AbortController().signal
const KEY = 'sk-upstream-secret-0123'

t.test('llamagate and ollama: GET /api/tags, models[].name, with the key as a Bearer token', async (t) => {
  const fake = await fakeUpstream(t, (req, res) => {
    if (req.url !== '/api/tags') { json(res, 404, { error: 'no' }); return }
    json(res, 200, { models: [{ name: 'acme/tiny', size: 1 }, { name: 'llama3:latest' }, { name: 'acme/tiny' }] })
  })
  t.same(await listUpstreamModels(upstream({ url: fake.origin, kind: 'llamagate', key: KEY }), never), ['acme/tiny', 'llama3:latest'], 'each name once')
  t.same(fake.received.at(-1), { method: 'GET', url: '/api/tags', authorization: `Bearer ${KEY}`, body: '' })
  t.same(await listUpstreamModels(upstream({ url: fake.origin, kind: 'ollama' }), never), ['acme/tiny', 'llama3:latest'])
  t.equal(fake.received.at(-1)?.authorization, null, 'no key, no Authorization header')
  t.same(await listUpstreamModels(upstream({ url: fake.origin, kind: 'ollama', models: ['llama3:latest', 'not/there'] }), never), ['llama3:latest'],
    'filtered to `models`; one the upstream does not list is left out')
})

t.test('openai: GET <url path>/v1/models, data[].id', async (t) => {
  const fake = await fakeUpstream(t, (req, res) => {
    if (req.url !== '/proxy/v1/models') { json(res, 404, { error: 'no' }); return }
    json(res, 200, { object: 'list', data: [{ id: 'Qwen/Qwen3-32B', object: 'model' }, { id: 'other' }] })
  })
  t.same(await listUpstreamModels(upstream({ url: `${fake.origin}/proxy`, kind: 'openai', key: KEY }), never), ['Qwen/Qwen3-32B', 'other'])
  t.equal(fake.received[0]?.authorization, `Bearer ${KEY}`)
  t.same(await listUpstreamModels(upstream({ url: `${fake.origin}/proxy`, kind: 'openai', models: ['other'] }), never), ['other'])
})

t.test('a refusal names the upstream, the status and its words, never the key (even when the upstream echoes it)', async (t) => {
  const fake = await fakeUpstream(t, (req, res) => json(res, 401, { error: { message: `Incorrect API key provided: ${req.authorization?.slice(7)}` } }))
  const err = await listUpstreamModels(upstream({ name: 'vllm', url: fake.origin, kind: 'openai', key: KEY }), never).catch((e: Error) => e)
  t.ok(err instanceof Error)
  t.match((err as Error).message, /^upstream "vllm" \(GET http:\/\/127\.0\.0\.1:\d+\/v1\/models\) answered 401: Incorrect API key provided: <redacted>$/)
  t.notMatch((err as Error).message, KEY)
  t.notMatch((err as Error).stack, KEY)
})

t.test('an unreadable answer, a wrong shape, no answer at all: each an error naming the upstream', async (t) => {
  const fake = await fakeUpstream(t, (req, res) => {
    if (req.url === '/api/tags') { res.end('<html>hello</html>'); return }
    json(res, 200, { data: 'nothing' })
  })
  await t.rejects(listUpstreamModels(upstream({ name: 'a', url: fake.origin, kind: 'ollama' }), never), /^upstream "a" \(GET .*\/api\/tags\) answered 200 with something that is not a model list$/)
  await t.rejects(listUpstreamModels(upstream({ name: 'b', url: fake.origin, kind: 'openai' }), never), /^upstream "b" .* not a model list$/)
  const proxy = await fakeUpstream(t, (_req, res) => { res.statusCode = 502; res.end('<html><body>Bad Gateway</body></html>') })
  await t.rejects(listUpstreamModels(upstream({ name: 'c', url: proxy.origin, kind: 'openai' }), never), /^upstream "c" \(GET .*\) answered 502$/, 'a proxy\'s page is not quoted')
  const gone = await fakeUpstream(t, () => {})
  await gone.close()
  await t.rejects(listUpstreamModels(upstream({ name: 'd', url: gone.origin, kind: 'openai', key: KEY }), never), /^upstream "d" \(GET http:\/\/127\.0\.0\.1:\d+\/v1\/models\) cannot be reached: .*ECONNREFUSED/)
})

t.test('an abort ends the read with the signal\'s reason', async (t) => {
  const fake = await fakeUpstream(t, () => { /* never answers */ })
  const controller = new AbortController()
  const read = listUpstreamModels(upstream({ url: fake.origin, kind: 'openai' }), controller.signal)
  controller.abort(new Error('enough'))
  await t.rejects(read, /^enough$/)
})
