import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
import { serveTinyModels } from '../../helpers/inference.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'
import { fakeUpstream, json } from './fake-upstream.js'

// Anthropic's Messages API to an upstream model converted to chat completions and back (`messages: convert`),
// asked by the official SDK through a front llamagate: bare llama-servers behind it (they have /v1/messages of their
// own, which convert leaves unused: the answers' ids show which path made them), a tool caller and a reasoner.
// A small fake upstream only where a fault must be forced: a chat-only engine (auto), an error mid-stream.

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string', enum: ['Paris', 'Tokyo'] } }, required: ['city'] },
}
const ASK = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]
/** The whole prompt: Anthropic's input_tokens leave out what the upstream read from its cache. */
const prompt = (usage: Anthropic.Usage): number => usage.input_tokens + (usage.cache_read_input_tokens ?? 0)

async function bareServer (t: Parameters<typeof serveTinyModels>[0], kind: 'caller' | 'r1', alias: string): Promise<string> {
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await realisticModel(kind), alias, ctxSize: 1024, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  await server.start()
  return server.endpoint.address.baseUrl
}

/** The front, once its probes listed `count` upstream models. */
async function front (t: Parameters<typeof serveTinyModels>[0], upstreams: unknown[], count: number): Promise<Anthropic> {
  // A tool caller ends its turn after the call (no ignore_eos); a low temperature keeps it on its steering. The
  // reasoner, unsteered, writes to its limit: a random-weight model may end its turn at any token.
  const { url } = await serveTinyModels(t, [], { upstreams, default_options: { ignore_eos: false, temperature: 0.2 }, models: { 'acme/r1': { options: { ignore_eos: true } } } })
  await until('the upstreams\' models listed', async () => {
    const { data } = await (await fetch(`${url}/v1/models`)).json() as { data: unknown[] }
    return data.length === count ? data : null
  })
  return new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
}

t.test('a bare llama-server\'s models through messages: convert, whole and streamed, with a tool and with thinking', async (t) => {
  const [caller, reasoner] = await Promise.all([bareServer(t, 'caller', 'acme/caller'), bareServer(t, 'r1', 'acme/r1')])
  const client = await front(t, [
    { name: 'caller', url: caller, kind: 'openai', messages: 'convert', prefix: 'up/' },
    { name: 'reasoner', url: reasoner, kind: 'openai', messages: 'convert' },
  ], 2)

  const whole = await client.messages.create({ model: 'up/acme/caller', max_tokens: 200, tools: [WEATHER], messages: ASK })
  t.match(whole.id, /^msg_/, 'made by the conversion (llama-server\'s own Messages ids are chatcmpl-...)')
  t.equal(whole.model, 'up/acme/caller', 'the name the client asked for, not the upstream\'s')
  t.equal(whole.stop_reason, 'tool_use')
  const calls = whole.content.filter((b) => b.type === 'tool_use')
  t.ok(calls.length >= 1, `calls: ${JSON.stringify(whole.content)}`)
  for (const call of calls) {
    t.equal(call.name, 'get_weather')
    t.ok(['Paris', 'Tokyo'].includes((call.input as { city?: string }).city ?? ''), `input parsed: ${JSON.stringify(call.input)}`)
  }
  t.ok(prompt(whole.usage) > 40 && whole.usage.output_tokens > 0, `usage ${JSON.stringify(whole.usage)}: the tools are in the prompt`)

  const stream = client.messages.stream({ model: 'up/acme/caller', max_tokens: 200, tools: [WEATHER], messages: ASK })
  const deltas: string[] = []
  stream.on('streamEvent', (event) => { if (event.type === 'content_block_delta') deltas.push(event.delta.type) })
  const streamed = await stream.finalMessage()
  t.match(streamed, { id: /^msg_/, model: 'up/acme/caller', stop_reason: 'tool_use' })
  t.ok(deltas.includes('input_json_delta'), `the arguments streamed as input_json_delta (${deltas.length} deltas)`)
  const call = streamed.content.find((b) => b.type === 'tool_use')
  t.match(call, { type: 'tool_use', name: 'get_weather', id: /.+/ })
  t.ok(['Paris', 'Tokyo'].includes((call?.input as { city?: string } | undefined)?.city ?? ''), `streamed input parsed: ${JSON.stringify(call?.input)}`)
  t.ok(prompt(streamed.usage) === prompt(whole.usage) && streamed.usage.output_tokens > 0, `streamed usage ${JSON.stringify(streamed.usage)}`)

  // The tool's result goes back as a tool message, and the model answers again.
  const next = await client.messages.create({
    model: 'up/acme/caller', max_tokens: 8, tools: [WEATHER],
    messages: [...ASK, { role: 'assistant', content: whole.content }, { role: 'user', content: calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: 'Sunny, 21 °C' })) }],
  })
  t.ok(prompt(next.usage) > prompt(whole.usage), 'the call and its result are in the next prompt')

  const thinking = client.messages.stream({ model: 'acme/r1', max_tokens: 12, messages: [{ role: 'user', content: 'Why is the sky blue?' }] })
  const kinds: string[] = []
  thinking.on('streamEvent', (event) => { if (event.type === 'content_block_start') kinds.push(event.content_block.type) })
  const reasoned = await thinking.finalMessage()
  t.equal(kinds[0], 'thinking', `the reasoning came as a thinking block: ${JSON.stringify(reasoned.content)}`)
  t.match(reasoned, { stop_reason: 'max_tokens', usage: { output_tokens: 12 } })

  const counted = await client.messages.countTokens({ model: 'up/acme/caller', tools: [WEATHER], messages: ASK })
  t.equal(counted.input_tokens, prompt(whole.usage), 'count_tokens: the prompt the chat counted')
})

t.test('auto: an engine without /v1/messages is converted for from its first 404; an error mid-stream is Anthropic\'s error event', async (t) => {
  let breaks = false
  const engine = await fakeUpstream(t, (req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') { json(res, 200, { data: [{ id: 'sglang/model' }] }); return }
    if (req.url !== '/v1/chat/completions') { json(res, 404, { detail: 'Not Found' }); return }
    const body = JSON.parse(req.body) as { stream?: boolean }
    if (!body.stream) { json(res, 200, { id: 'chatcmpl-f', choices: [{ message: { content: 'Hello there' }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 2 } }); return }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-s', choices: [{ delta: { content: 'Hel' } }] })}\n\n`)
    if (breaks) { res.end(`data: ${JSON.stringify({ error: { message: 'the engine ran out of memory', code: 500 } })}\n\n`); return }
    res.end(`data: ${JSON.stringify({ choices: [{ delta: { content: 'lo' }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`)
  })
  const client = await front(t, [{ name: 'sglang', url: engine.origin, kind: 'openai' }], 1)
  const whole = await client.messages.create({ model: 'sglang/model', max_tokens: 8, messages: ASK })
  t.match(whole, { id: 'msg_f', content: [{ type: 'text', text: 'Hello there' }], stop_reason: 'end_turn', usage: { input_tokens: 9, output_tokens: 2 } })
  const streamed = await client.messages.stream({ model: 'sglang/model', max_tokens: 8, messages: ASK }).finalMessage()
  t.match(streamed, { id: 'msg_s', content: [{ type: 'text', text: 'Hello' }], usage: { input_tokens: 9, output_tokens: 2 } })
  const paths = engine.received.filter((r) => r.method === 'POST').map((r) => r.url)
  t.same(paths, ['/v1/messages', '/v1/chat/completions', '/v1/chat/completions'], 'refused once, converted from then on')

  breaks = true
  const texts: string[] = []
  const broken = client.messages.stream({ model: 'sglang/model', max_tokens: 8, messages: ASK })
  broken.on('text', (text) => texts.push(text))
  const err = await broken.finalMessage().catch((e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError, `the SDK raised ${String(err)}`)
  t.match((err as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'api_error', message: /the engine ran out of memory/ } })
  t.same(texts, ['Hel'], 'after what had gone out')
})

t.test('native: a refusal is the client\'s answer, nothing converted', async (t) => {
  const engine = await fakeUpstream(t, (req, res) => {
    if (req.method === 'GET') { json(res, 200, { data: [{ id: 'old/model' }] }); return }
    json(res, 404, { detail: 'Not Found' })
  })
  const client = await front(t, [{ name: 'old', url: engine.origin, kind: 'openai', messages: 'native' }], 1)
  const err = await client.messages.create({ model: 'old/model', max_tokens: 8, messages: ASK }).catch((e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError)
  t.same(engine.received.filter((r) => r.method === 'POST').map((r) => r.url), ['/v1/messages'])
})
