import type { IncomingMessage } from 'node:http'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { ndjsonEvents, post, serveTinyModels } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// A front llamagate serving, beside its own model, a back llamagate's model (kind llamagate, keys on, reached with
// the back's key) and a bare llama-server's (kind openai): every surface through each, with the front's own keys.

const BACK = 'lg-test-back-upstream-0123456789'
const FRONT = 'lg-test-front-client-0123456789'
const OPTIONS = { num_ctx: 512, num_parallel: 2, max_tokens: 6, ignore_eos: true }

async function keysFile (t: Test, name: string, secret: string): Promise<string> {
  const file = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(file, { keys: [{ name, hash: hashSecret(secret), scopes: ['infer'], models: ['*'], limits: {}, created: new Date().toISOString() }] })
  return file
}

/** The back llamagate on `port` (0: a free one), recording the credentials each request to it showed. */
async function serveBack (t: Test, keys: string, port = 0): Promise<{ app: FastifyInstance, url: string, seen: string[] }> {
  const runtime = await cpuRuntime()
  const app = await buildTestApp(await testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, auth: { keys_file: keys }, default_options: OPTIONS }))
  t.teardown(() => app.close())
  const seen: string[] = []
  // Beside Fastify's own listener: what came in on the wire, whatever the routes made of it.
  app.server.on('request', (request: IncomingMessage) => { seen.push(`${request.headers.authorization ?? ''}|${request.headers['x-api-key'] ?? ''}`) })
  const file = join(await tempDir(t, 'llamagate-models-'), 'back.gguf')
  await writeTinyGguf({ file, seed: 7, name: 'acme/backchat' })
  await app.store.import('acme/backchat', file)
  return { app, url: await app.listen({ host: '127.0.0.1', port }), seen }
}

const auth = { authorization: `Bearer ${FRONT}` }
// Ollama's own clients' stream format.
const ndjson = { ...auth, accept: 'application/x-ndjson' }
const get = async (url: string): Promise<{ status: number, text: string, headers: string }> => {
  const res = await fetch(url, { headers: auth })
  return { status: res.status, text: await res.text(), headers: JSON.stringify([...res.headers]) }
}

t.test('a front serves a back llamagate\'s and a bare llama-server\'s models on every surface, with its own keys', async (t) => {
  const backKeys = await keysFile(t, 'front-service', BACK)
  const back = await serveBack(t, backKeys)
  // A random-weight model may end its turn at any token: the bare server, which the front's default options do not
  // reach, holds every answer to its length itself.
  const bare = new LlamaServer({ build: await cpuRuntime(), modelPath: (await writeTinyGguf({ file: join(await tempDir(t), 'bare.gguf'), seed: 9 })).file, alias: 'acme/bare', ctxSize: 512, parallel: 2, threads: 1, extraArgs: ['--ignore-eos'] })
  t.teardown(() => bare.stop())
  await bare.start()
  const front = await serveTinyModels(t, ['acme/local'], {
    auth: { keys_file: await keysFile(t, 'client', FRONT) },
    upstreams: [
      { name: 'back', url: back.url, kind: 'llamagate', key: BACK, prefix: 'back/' },
      { name: 'bare', url: bare.endpoint.address.baseUrl, kind: 'openai' },
    ],
    default_options: OPTIONS,
  })
  const received: string[] = []
  const seeing = async (res: Response): Promise<string> => {
    const text = await res.text()
    received.push(text, JSON.stringify([...res.headers]))
    return text
  }

  // The probes start with the app: both upstreams' models show up beside the local one.
  const tags = await until('both upstreams listed', async () => {
    const { models } = JSON.parse((await get(`${front.url}/api/tags`)).text) as { models: Array<Record<string, unknown>> }
    return models.length === 3 ? models : null
  })
  t.same(tags.map((m) => m.name).sort(), ['acme/bare', 'acme/local', 'back/acme/backchat'])
  t.match(tags.find((m) => m.name === 'back/acme/backchat'), { size: 0, remote_model: 'acme/backchat', remote_host: back.url, details: { format: 'remote' } })
  t.match(tags.find((m) => m.name === 'acme/bare'), { remote_model: 'acme/bare', remote_host: bare.endpoint.address.baseUrl })
  t.notOk('remote_model' in tags.find((m) => m.name === 'acme/local')!, 'a local model is no remote one')
  const models = JSON.parse((await get(`${front.url}/v1/models`)).text) as { data: Array<{ id: string, owned_by: string }> }
  t.same(models.data.map((m) => [m.id, m.owned_by]).sort(), [['acme/bare', 'bare'], ['acme/local', 'acme'], ['back/acme/backchat', 'back']])
  t.equal((await get(`${front.url}/v1/models/back/acme/backchat`)).status, 200)
  t.equal((await fetch(`${front.url}/api/tags`)).status, 401, 'the front\'s own keys apply')

  for (const model of ['back/acme/backchat', 'acme/bare']) {
    const messages = [{ role: 'user', content: 'hello' }]
    const whole = await post(`${front.url}/v1/chat/completions`, { model, messages, max_tokens: 4 }, auth)
    const body = JSON.parse(await seeing(whole)) as { model: string, choices: Array<{ message: { content: string } }>, usage: { completion_tokens: number } }
    t.equal(whole.status, 200, `${model}: chat completion`)
    t.ok(body.choices[0]!.message.content.length > 0, `${model}: text`)
    t.equal(body.usage.completion_tokens, 4)

    const streamed = await post(`${front.url}/v1/chat/completions`, { model, messages, max_tokens: 4, stream: true }, auth)
    const sse = await seeing(streamed)
    t.equal(streamed.status, 200, `${model}: streamed chat completion`)
    t.match(sse, /"content":"[^"]+"/)
    t.match(sse, /data: \[DONE\]/)

    const chat = await post(`${front.url}/api/chat`, { model, messages, options: { num_predict: 4 } }, ndjson)
    t.equal(chat.status, 200, `${model}: /api/chat`)
    const lines = (await seeing(chat)).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { model: string, done: boolean, message: { content: string }, eval_count?: number })
    t.equal(lines.at(-1)!.done, true)
    t.equal(lines[0]!.model, model, 'answered under the front\'s name')
    t.ok(lines.map((l) => l.message.content).join('').length > 0, `${model}: /api/chat text`)

    const messagesRes = await post(`${front.url}/v1/messages`, { model, max_tokens: 4, messages }, auth)
    const message = JSON.parse(await seeing(messagesRes)) as { type: string, content: Array<{ text: string }> }
    t.equal(messagesRes.status, 200, `${model}: /v1/messages`)
    t.equal(message.type, 'message')
    t.ok(message.content[0]!.text.length > 0, `${model}: /v1/messages text`)
  }

  // Usage is the front's: under its client key, per model, with the upstreams' tokens.
  const usage = JSON.parse((await get(`${front.url}/api/usage`)).text) as { keys: Array<{ key: string, models: Array<{ model: string, requests: number, generated_tokens: number, prompt_tokens: number }> }> }
  t.equal(usage.keys[0]!.key, 'client')
  for (const model of ['back/acme/backchat', 'acme/bare']) {
    const row = usage.keys[0]!.models.find((m) => m.model === model)
    t.equal(row?.requests, 4, `${model}: four requests counted`)
    t.ok((row?.generated_tokens ?? 0) >= 16 && (row?.prompt_tokens ?? 0) > 0, `${model}: tokens counted (${row?.prompt_tokens} in, ${row?.generated_tokens} out)`)
  }

  // The back saw only its own key; the client never saw it.
  t.ok(back.seen.length >= 5, `the back was asked (${back.seen.length} requests)`)
  t.same([...new Set(back.seen)], [`Bearer ${BACK}|`], 'every request to the back showed the back\'s key, and only it')
  t.notOk(received.some((text) => text.includes(BACK)), 'no body or header the client received holds the back\'s key')

  // The back goes: the next request is a 502 naming the upstream, and its model drops from the list once probed.
  const { port } = new URL(back.url)
  await back.app.close()
  const refused = await post(`${front.url}/v1/chat/completions`, { model: 'back/acme/backchat', messages: [{ role: 'user', content: 'hi' }] }, auth)
  const refusal = await refused.text()
  t.equal(refused.status, 502)
  t.match(JSON.parse(refusal), { error: { code: 'upstream_unavailable', message: /upstream "back"/ } })
  t.notOk(refusal.includes(BACK))
  const streamRefused = await post(`${front.url}/api/chat`, { model: 'back/acme/backchat', messages: [{ role: 'user', content: 'hi' }] }, auth)
  const streamRefusal = await streamRefused.text()
  t.equal(streamRefused.status, 502, 'a stream that never opened answers the status')
  t.match(streamRefusal, /upstream \\?"back\\?"/)
  await until('the back dropped from the list', async () => !(await get(`${front.url}/api/tags`)).text.includes('back/acme/backchat'))
  const down = await post(`${front.url}/v1/messages`, { model: 'back/acme/backchat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }, auth)
  const downText = await down.text()
  t.equal(down.status, 502, 'gone from the list: a name under its prefix hears why')
  t.match(downText, /upstream \\"back\\" is unavailable/)
  t.notOk(downText.includes(BACK))

  // Back again on the same port: listed and answered once the probe sees it.
  const again = await serveBack(t, backKeys, Number(port))
  const upstream = front.app.config.upstreams.find((u) => u.name === 'back')!
  await until('the back listed again', async () => {
    await front.app.upstreams.recheck(upstream)
    return (await get(`${front.url}/api/tags`)).text.includes('back/acme/backchat')
  })
  const answered = await post(`${front.url}/api/chat`, { model: 'back/acme/backchat', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } }, ndjson)
  t.equal(answered.status, 200)
  const events = await ndjsonEvents(answered) as Array<{ done: boolean, eval_count?: number }>
  t.match(events.at(-1), { done: true, eval_count: 3 }, 'three tokens')
  t.same([...new Set(again.seen)], [`Bearer ${BACK}|`])
})
