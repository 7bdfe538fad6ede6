import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
import { UpstreamEndpoint } from '../../../plugins/upstreams/upstream-endpoint.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { ndjsonEvents, post, serveTinyModels, sseEvents } from '../../helpers/inference.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'
import { fakeUpstream, json, upstream } from './fake-upstream.js'

// Each surface of a front llamagate answered through each kind of upstream: another llamagate (kind llamagate, keys
// on), a bare llama-server (kind openai; a second one serving embeddings) and an Ollama (kind ollama). There is no
// Ollama here: a llamagate speaks what the gateway asks of one (/api/tags, /api/show, /api/generate, /api/embed,
// /api/embeddings and the OpenAI-compatible /v1 paths, as Ollama does), so the kind ollama upstream is the same back
// llamagate under another prefix; the last test checks Ollama's own shapes where they differ from a llamagate's.
// The surfaces speak to every endpoint in llama-server's paths; where an upstream lacks one (/completion), the
// UpstreamEndpoint asks a path it has; embeddings of an upstream's model are not tokenized here (no /tokenize there).

const BACK = 'lg-test-back-surfaces-0123456789'
const TOKENS = 3
const OPTIONS = { num_ctx: 512, num_parallel: 1, ignore_eos: true }

async function keysFile (t: Test, secret: string): Promise<string> {
  const file = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(file, { keys: [{ name: 'front-service', hash: hashSecret(secret), scopes: ['infer'], models: ['*'], limits: {}, created: new Date().toISOString() }] })
  return file
}

/** A llama-server of its own (kind openai), on one thread. */
async function bareServer (t: Test, modelPath: string, alias: string, embeddings = false): Promise<string> {
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath, alias, ctxSize: 512, parallel: 1, threads: 1, ...(embeddings ? { embeddings, batchSize: 512 } : {}) })
  t.teardown(() => server.stop())
  await server.start()
  return server.endpoint.address.baseUrl
}

/** The data of each event of a stream whose events are named (`event: ...` then `data: ...`), as the Responses API's are. */
async function namedEvents (res: Response): Promise<unknown[]> {
  return (await res.text()).split('\n\n').filter((e) => e.trim() !== '').map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: '))!.slice(6)))
}

interface Stats { done: boolean, done_reason?: string, eval_count?: number, prompt_eval_count?: number }

t.test('each surface of the front answers through each kind of upstream', async (t) => {
  const runtime = await cpuRuntime()
  const bge = await realisticModel('bert')
  // Its native streams in NDJSON, as Ollama's are (a llamagate's default is SSE).
  const back = await buildTestApp(await testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, auth: { keys_file: await keysFile(t, BACK) }, default_options: OPTIONS, stream_format: 'ndjson' }))
  t.teardown(() => back.close())
  const backFile = join(await tempDir(t, 'llamagate-models-'), 'back.gguf')
  await writeTinyGguf({ file: backFile, seed: 7, name: 'acme/backchat' })
  await back.store.import('acme/backchat', backFile)
  await back.store.import('acme/bge', bge)
  const backUrl = await back.listen({ host: '127.0.0.1', port: 0 })
  const backSaw: string[] = []
  back.server.on('request', (request: IncomingMessage) => { backSaw.push(`${request.method} ${request.url}`) })
  const [bareUrl, bareBgeUrl] = await Promise.all([
    bareServer(t, (await writeTinyGguf({ file: join(await tempDir(t), 'bare.gguf'), seed: 9 })).file, 'acme/bare'),
    bareServer(t, bge, 'acme/bare-bge', true),
  ])
  const front = await serveTinyModels(t, [], {
    upstreams: [
      { name: 'back', url: backUrl, kind: 'llamagate', key: BACK, prefix: 'back/' },
      { name: 'oll', url: backUrl, kind: 'ollama', key: BACK, prefix: 'oll/' },
      { name: 'bare', url: bareUrl, kind: 'openai' },
      { name: 'bare-bge', url: bareBgeUrl, kind: 'openai' },
    ],
    default_options: OPTIONS,
  })
  const { url } = front
  await until('every upstream listed', async () => {
    const { models } = await (await fetch(`${url}/api/tags`)).json() as { models: unknown[] }
    return models.length === 6
  })

  const chats: Array<[string, string, string]> = [['back/acme/backchat', 'acme/backchat', backUrl], ['oll/acme/backchat', 'acme/backchat', backUrl], ['acme/bare', 'acme/bare', bareUrl]]
  for (const [model, remote, host] of chats) {
    await t.test(model, async (t) => {
      const prompt = 'Once upon a time'
      // Greedy: the same few tokens each time (a random model's may be pieces of one character, no text until whole).
      const options = { num_predict: TOKENS, temperature: 0 }
      // /api/generate: templated (the upstream's chat template), then raw (the prompt as it is: llama-server's /completion).
      for (const raw of [false, true]) {
        const what = `${model}: /api/generate${raw ? ' raw' : ''}`
        const whole = await post(`${url}/api/generate`, { model, prompt, raw, stream: false, options })
        const answer = await whole.json() as Stats & { model: string, response: string }
        t.equal(whole.status, 200, `${what}: ${JSON.stringify(answer)}`)
        t.match(answer, { model, done: true, done_reason: 'length', eval_count: TOKENS }, `${what}: whole`)
        t.ok(answer.response.length > 0 && (answer.prompt_eval_count ?? 0) > 0, `${what}: text, and the prompt's tokens counted (${answer.prompt_eval_count})`)

        const streamed = await post(`${url}/api/generate`, { model, prompt, raw, options }, { accept: 'application/x-ndjson' })
        t.equal(streamed.status, 200, `${what}: streamed`)
        const lines = await ndjsonEvents(streamed) as Array<Stats & { response: string }>
        t.match(lines.at(-1), { done: true, done_reason: 'length', eval_count: TOKENS }, `${what}: streamed, the last line`)
        t.ok(lines.slice(0, -1).map((l) => l.response).join('').length > 0, `${what}: streamed text`)
      }

      // A raw prompt with a format: the JSON schema reaches the upstream in its own terms, and its grammar holds.
      const formatted = await (await post(`${url}/api/generate`, { model, prompt, raw: true, stream: false, format: 'json', options })).json() as { response: string }
      t.match(formatted.response, /^\s*\{/, `${model}: raw, format json: ${JSON.stringify(formatted.response)}`)

      // /v1/completions: passed through, but to Ollama's /api/generate with raw (its /v1/completions templates the prompt).
      const completion = await post(`${url}/v1/completions`, { model, prompt, max_tokens: TOKENS, temperature: 0 })
      const text = await completion.json() as { model: string, choices: Array<{ text: string, finish_reason: string }>, usage: { completion_tokens: number } }
      t.equal(completion.status, 200, `${model}: /v1/completions ${JSON.stringify(text)}`)
      t.match(text, { model, choices: [{ finish_reason: 'length' }], usage: { completion_tokens: TOKENS } })
      const sse = await sseEvents(await post(`${url}/v1/completions`, { model, prompt, max_tokens: TOKENS, temperature: 0, stream: true }))
      t.equal(sse.at(-1), '[DONE]', `${model}: /v1/completions streamed`)
      t.same([...new Set(sse.slice(0, -1).map((e) => (e as { model?: string }).model))], [model], `${model}: every chunk under the name asked for`)
      t.ok(sse.some((e) => ((e as { choices?: Array<{ text?: string }> }).choices?.[0]?.text ?? '') !== ''), `${model}: streamed text`)

      // /v1/responses, made on the upstream's chat completions.
      const response = await post(`${url}/v1/responses`, { model, input: prompt, max_output_tokens: TOKENS, temperature: 0 })
      const made = await response.json() as { status: string, output: Array<{ content: Array<{ text: string }> }>, usage: { output_tokens: number, input_tokens: number } }
      t.equal(response.status, 200, `${model}: /v1/responses ${JSON.stringify(made)}`)
      t.match(made, { model, status: 'incomplete', usage: { output_tokens: TOKENS } }, `${model}: /v1/responses, cut at max_output_tokens`)
      t.ok(made.output[0]!.content[0]!.text.length > 0 && made.usage.input_tokens > 0)
      const events = await namedEvents(await post(`${url}/v1/responses`, { model, input: prompt, max_output_tokens: TOKENS, temperature: 0, stream: true })) as Array<{ type: string, response?: { usage: { output_tokens: number } } }>
      t.same([events[0]!.type, events.at(-1)!.type], ['response.created', 'response.incomplete'], `${model}: /v1/responses streamed`)
      t.equal(events.at(-1)!.response!.usage.output_tokens, TOKENS)

      // The chat surfaces (upstreams.case.ts asks them of kinds llamagate and openai with keys): here each kind, whole and streamed.
      const messages = [{ role: 'user', content: prompt }]
      const chat = await post(`${url}/api/chat`, { model, messages, stream: false, options })
      t.match(await chat.json(), { model, done: true, done_reason: 'length', eval_count: TOKENS, message: { role: 'assistant' } }, `${model}: /api/chat whole`)
      const chatLines = await ndjsonEvents(await post(`${url}/api/chat`, { model, messages, options }, { accept: 'application/x-ndjson' })) as Array<{ done: boolean, eval_count?: number }>
      t.match(chatLines.at(-1), { done: true, eval_count: TOKENS }, `${model}: /api/chat streamed`)
      const completionsChat = await post(`${url}/v1/chat/completions`, { model, messages, max_tokens: TOKENS, temperature: 0 })
      t.match(await completionsChat.json(), { model, choices: [{ finish_reason: 'length' }], usage: { completion_tokens: TOKENS } }, `${model}: /v1/chat/completions whole`)
      const chatSse = await sseEvents(await post(`${url}/v1/chat/completions`, { model, messages, max_tokens: TOKENS, temperature: 0, stream: true })) as Array<{ model?: string } | string>
      t.equal(chatSse.at(-1), '[DONE]', `${model}: /v1/chat/completions streamed`)
      t.same([...new Set(chatSse.slice(0, -1).map((e) => (e as { model?: string }).model))], [model], `${model}: every chunk under the name asked for`)
      const anthropic = await post(`${url}/v1/messages`, { model, messages, max_tokens: TOKENS, temperature: 0 })
      t.match(await anthropic.json(), { type: 'message', model, role: 'assistant', stop_reason: 'max_tokens', usage: { output_tokens: TOKENS } }, `${model}: /v1/messages whole`)
      const anthropicEvents = await namedEvents(await post(`${url}/v1/messages`, { model, messages, max_tokens: TOKENS, temperature: 0, stream: true })) as Array<{ type: string, message?: { model: string } }>
      t.same([anthropicEvents[0]!.type, anthropicEvents.at(-1)!.type], ['message_start', 'message_stop'], `${model}: /v1/messages streamed`)
      t.equal(anthropicEvents[0]!.message?.model, model, `${model}: message_start under the name asked for`)

      // Ollama's load forms (`ollama run` sends one first): nothing to load here, answered as a local model's.
      const loaded = await post(`${url}/api/generate`, { model })
      t.match(await loaded.json(), { model, done: true, done_reason: 'load' }, `${model}: /api/generate with no prompt loads`)
      const chatLoaded = await post(`${url}/api/chat`, { model, messages: [] })
      t.match(await chatLoaded.json(), { model, done: true, done_reason: 'load' }, `${model}: /api/chat with no messages loads`)
      const unloaded = await post(`${url}/api/generate`, { model, keep_alive: 0 })
      t.match(await unloaded.json(), { model, done: true, done_reason: 'unload' }, `${model}: keep_alive 0 unloads`)

      // /api/show: what the front knows of it, and where it runs.
      const show = await post(`${url}/api/show`, { model })
      const shown = await show.json() as Record<string, unknown>
      t.equal(show.status, 200, `${model}: /api/show ${JSON.stringify(shown)}`)
      t.match(shown, { details: { name: model, format: 'remote', size: 0 }, remote_model: remote, remote_host: host, capabilities: ['completion'] }, `${model}: /api/show`)
      // A llamagate (and Ollama) describes its model; an OpenAI-compatible engine gives only its name.
      if (host === backUrl) t.match(shown, { details: { family: 'llama' }, model_info: { 'general.architecture': 'llama' }, template: /\S/ }, `${model}: the upstream's own description`)
      else t.same([shown.model_info, shown.template], [{}, ''])
    })
  }

  // An OpenAI-compatible engine says nothing of what its model does: shown as a completion model.
  for (const [model, remote] of [['back/acme/bge', true], ['oll/acme/bge', true], ['acme/bare-bge', false]] as const) {
    await t.test(model, async (t) => {
      const input = ['The quick brown fox', 'the lazy dog']
      const embed = await post(`${url}/api/embed`, { model, input })
      const native = await embed.json() as { model: string, embeddings: number[][], prompt_eval_count: number }
      t.equal(embed.status, 200, `${model}: /api/embed ${JSON.stringify(native).slice(0, 300)}`)
      t.equal(native.model, model)
      t.same(native.embeddings.map((v) => v.length), [64, 64], 'two vectors, of the model\'s length')
      t.ok(native.embeddings.every((v) => Math.abs(Math.hypot(...v) - 1) < 1e-3), 'normalized')
      t.ok(native.prompt_eval_count >= 8, `the inputs' tokens counted (${native.prompt_eval_count})`)

      const openai = await post(`${url}/v1/embeddings`, { model, input })
      const vectors = await openai.json() as { model: string, data: Array<{ index: number, embedding: number[] }>, usage: { prompt_tokens: number } }
      t.equal(openai.status, 200, `${model}: /v1/embeddings ${JSON.stringify(vectors).slice(0, 300)}`)
      t.same(vectors.data.map((d) => [d.index, d.embedding.length]), [[0, 64], [1, 64]])
      t.ok(vectors.data[0]!.embedding.every((x, i) => Math.abs(x - native.embeddings[0]![i]!) < 1e-4), 'the same vector on both surfaces')
      t.equal(vectors.usage.prompt_tokens, native.prompt_eval_count)

      // Ollama's legacy route: one prompt, the vector as pooled (not normalized).
      const legacy = await post(`${url}/api/embeddings`, { model, prompt: input[0] })
      const raw = await legacy.json() as { embedding: number[] }
      t.equal(legacy.status, 200, `${model}: /api/embeddings`)
      t.equal(raw.embedding.length, 64)
      t.ok(Math.abs(Math.hypot(...raw.embedding) - 1) > 1e-3, `not normalized (length ${Math.hypot(...raw.embedding)})`)
      t.ok(raw.embedding.every((x, i) => Math.abs(x / Math.hypot(...raw.embedding) - native.embeddings[0]![i]!) < 1e-4), 'the same direction')

      const show = await post(`${url}/api/show`, { model })
      t.match(await show.json(), { details: { format: 'remote' }, capabilities: [remote ? 'embedding' : 'completion'] }, `${model}: /api/show`)
    })
  }

  // What the back lacks was never asked of it: the raw prompts went to /v1/completions (kind llamagate) and /api/generate
  // (kind ollama), the embeddings to /api/embed and /api/embeddings.
  const paths = new Set(backSaw.map((line) => line.replace(/\?.*$/, '')))
  t.notOk(paths.has('POST /completion') || paths.has('POST /tokenize'), `the back was asked only what it has: ${[...paths].join(', ')}`)
  t.ok(['/v1/completions', '/api/generate', '/api/embed', '/api/embeddings'].every((path) => paths.has(`POST ${path}`)))
})

// Ollama's own shapes, which the llamagate standing in for it above does not give: NDJSON streams, and chat
// completions with `usage` but no llama-server `timings` (sent only when asked for, in a chunk of its own). A stand-in
// answering as Ollama's documented API does, since no Ollama runs here.
t.test('an Ollama\'s own shapes: NDJSON raw generations, chat usage without timings, embeddings at /api/embed', async (t) => {
  const never = new AbortController().signal
  const ndjson = (res: ServerResponse, lines: unknown[]): void => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' })
    res.end(lines.map((l) => `${JSON.stringify(l)}\n`).join(''))
  }
  const done = { done: true, done_reason: 'length', prompt_eval_count: 5, prompt_eval_duration: 2e6, eval_count: 2, eval_duration: 4e6 }
  const fake = await fakeUpstream(t, (req, res) => {
    const body = JSON.parse(req.body) as { stream?: boolean, stream_options?: unknown, input?: string[] }
    if (req.url === '/api/generate' && body.stream === true) ndjson(res, [{ response: 'a', done: false }, { response: 'é', done: false }, { response: '', ...done }])
    else if (req.url === '/api/generate') json(res, 200, { model: 'llama3', response: 'aé', ...done })
    else if (req.url === '/api/embed') json(res, 200, { embeddings: body.input!.map((_, i) => [i, 1]), prompt_eval_count: 7 })
    else if (req.url === '/api/embeddings') json(res, 200, { embedding: [3, 4] })
    else if (req.url === '/v1/chat/completions' && body.stream !== true) json(res, 200, { choices: [{ message: { content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 1 } })
    else if (req.url === '/v1/chat/completions') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const chunks = [{ choices: [{ delta: { content: 'hi' }, finish_reason: null }] }, { choices: [{ delta: {}, finish_reason: 'length' }] }, { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } }]
      res.end(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`)
    } else json(res, 404, { error: `no route ${req.url}` })
  })
  const endpoint = new UpstreamEndpoint(upstream({ url: fake.origin, kind: 'ollama' }), 'llama3')
  t.teardown(() => endpoint.close())
  const sent = (): Record<string, unknown> => JSON.parse(fake.received.at(-1)!.body) as Record<string, unknown>
  const all = async (events: AsyncGenerator<unknown>): Promise<unknown[]> => { const seen: unknown[] = []; for await (const e of events) seen.push(e); return seen }

  const ask = { prompt: 'hi', n_predict: 2, temperature: 0.5, stop: '\n', json_schema: { type: 'object' }, cache_prompt: true }
  t.match(await endpoint.postJson('/completion', ask, never), { content: 'aé', stop: true, stop_type: 'limit', timings: { prompt_n: 5, predicted_n: 2, prompt_ms: 2, predicted_ms: 4 } })
  t.same(sent(), { model: 'llama3', prompt: 'hi', raw: true, stream: false, format: { type: 'object' }, options: { num_predict: 2, temperature: 0.5, stop: ['\n'] } }, 'Ollama\'s fields; what it lacks is not sent')
  t.match(await all(await endpoint.events('/completion', { ...ask, stream: true }, never)), [{ content: 'a', stop: false }, { content: 'é', stop: false }, { content: '', stop: true, stop_type: 'limit', timings: { prompt_n: 5, predicted_n: 2 } }])

  t.match(await endpoint.postJson('/v1/chat/completions', { messages: [] }, never), { timings: { prompt_n: 9, predicted_n: 1 } }, 'a whole chat answer: timings from its usage')
  const chat = await all(await endpoint.events('/v1/chat/completions', { messages: [], stream: true }, never))
  t.match(sent(), { stream_options: { include_usage: true } }, 'a stream is asked for its usage')
  t.match(chat, [{ choices: [{ delta: { content: 'hi' } }] }, { choices: [{ finish_reason: 'length' }], usage: { completion_tokens: 2 }, timings: { prompt_n: 9, predicted_n: 2 } }])
  t.equal(chat.length, 2, 'the usage chunk folded into the finish chunk, which ends the stream as llama-server\'s does')

  const tail: Buffer[] = []
  const progress = { tailBytes: 512, tail: Buffer.alloc(0) }
  await endpoint.relay('/v1/completions', JSON.stringify({ model: 'x', prompt: 'hi', max_tokens: 2, stream: true }), {
    open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { tail.push(chunk); return true }, drained: () => Promise.resolve(),
  }, progress, never)
  t.match(sent(), { raw: true, options: { num_predict: 2 } }, 'OpenAI\'s text completion at /api/generate: Ollama\'s /v1/completions would template the prompt')
  const relayed = Buffer.concat(tail).toString()
  t.match(relayed, /^data: \{"id":"cmpl-[^"]+","object":"text_completion".*"text":"a".*"finish_reason":"length"\}\],"usage":\{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7\}\}\n\ndata: \[DONE\]\n\n$/s)
  t.ok(Buffer.concat(tail).subarray(-512).equals(progress.tail), 'the tail kept, for the usage the passthrough counts')

  t.same(await endpoint.postJson('/v1/embeddings', { input: ['a', 'b'], embd_normalize: 2, truncate: false }, never), { data: [{ index: 0, embedding: [0, 1] }, { index: 1, embedding: [1, 1] }], usage: { prompt_tokens: 7 } })
  t.same(sent(), { model: 'llama3', input: ['a', 'b'], truncate: false })
  t.same(await endpoint.postJson('/v1/embeddings', { input: ['a'], embd_normalize: -1 }, never), { data: [{ index: 0, embedding: [3, 4] }] }, 'raw vectors from the legacy route')
})
