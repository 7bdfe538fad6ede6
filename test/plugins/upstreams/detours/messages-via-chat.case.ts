import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { GatewayError, RuntimeError } from '../../../../core/base/errors.js'
import { messageOf, type ChatAnswer } from '../../../../plugins/upstreams/detours/messages-answer.js'
import { chatRequestOf } from '../../../../plugins/upstreams/detours/messages-request.js'
import { MessagesEvents } from '../../../../plugins/upstreams/detours/messages-stream.js'
import { isMessagesPath, isMissingSurface, MessagesSupport, postMessagesViaChat, relayMessagesViaChat } from '../../../../plugins/upstreams/detours/messages-via-chat.js'
import { UpstreamModelClient } from '../../../../plugins/upstreams/upstream-model-client.js'
import { answerCachedTokens, answerUsage } from '../../../../runtimes/endpoint/answer-usage.js'
import type { RelayProgress, RelaySink } from '../../../../runtimes/endpoint/stream-relay.js'
import { fakeUpstream, json, upstream, type Received } from '../fake-upstream.js'

// Anthropic Messages for an upstream that has only chat completions: the request converted, the answer (whole
// and streamed) converted back and read by the official SDK, the relay's contract with the surface, and when
// `auto` converts.

const never = new AbortController().signal

/**
 * The client UpstreamEndpoint makes its calls with (the upstream's own model name in every body), without the
 * endpoint's routing of the Messages paths: `post` and `relay` here are the native ones.
 */
function endpointTo (t: Parameters<typeof fakeUpstream>[0], origin: string, model = 'm'): UpstreamModelClient {
  const endpoint = new UpstreamModelClient(upstream({ url: origin, kind: 'openai' }), model)
  t.teardown(() => endpoint.close())
  return endpoint
}

/** The SDK reading `body` as the answer to its request: the same parsing it does of a real server's bytes. */
function sdkReading (body: string, stream: boolean): Anthropic {
  return new Anthropic({
    apiKey: 'unused', baseURL: 'http://gateway.invalid', maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' } }),
  })
}

const ASK = { model: 'vllm/qwen', max_tokens: 64, messages: [{ role: 'user' as const, content: 'weather?' }] }

/** A relay sink that keeps what it is given, and checks that nothing is written while it is backed up. */
function collectingSink (backedUp = false): RelaySink & { opened: number, text: () => string, writes: number, waits: number, overruns: number } {
  const chunks: Buffer[] = []
  let pending = false
  const sink = {
    opened: 0, writes: 0, waits: 0, overruns: 0,
    open () { sink.opened++ },
    chunkedSocket: () => null,
    writeRaw (chunk: Buffer) {
      if (pending) sink.overruns++
      sink.writes++
      chunks.push(Buffer.from(chunk))
      if (backedUp) pending = true
      return !backedUp
    },
    drained: () => {
      sink.waits++
      return new Promise<void>((resolve) => setImmediate(() => { pending = false; resolve() }))
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
  }
  return sink
}

/** An engine with chat completions only: streams `chunks` (then [DONE] unless `cut`), answers whole with `whole`, and 404s the rest as FastAPI does. */
async function chatOnly (t: Parameters<typeof fakeUpstream>[0], answer: { chunks?: unknown[], whole?: unknown, cut?: boolean }) {
  return fakeUpstream(t, (req: Received, res) => {
    if (req.url !== '/v1/chat/completions') { json(res, 404, { detail: 'Not Found' }); return }
    const body = JSON.parse(req.body) as { stream?: boolean }
    if (!body.stream) { json(res, 200, answer.whole ?? {}); return }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    for (const chunk of answer.chunks ?? []) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
    res.end(answer.cut === true ? '' : 'data: [DONE]\n\n')
  })
}

// A chat stream as vLLM sends one: thinking, text, two calls whose arguments come in pieces, the usage last.
const CHUNKS: ChatAnswer[] = [
  { id: 'chatcmpl-abc123', choices: [{ delta: { content: '' } }] },
  { choices: [{ delta: { reasoning_content: 'Let me ' } }] },
  { choices: [{ delta: { reasoning_content: 'think.' } }] },
  { choices: [{ delta: { content: 'Checking ' } }] },
  { choices: [{ delta: { content: 'the weather.' } }] },
  { choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '' } }] } }] },
  { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"city": "Pa' } }] } }] },
  { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ris"}' } }] } }] },
  { choices: [{ delta: { tool_calls: [{ index: 1, id: 'call_2', function: { name: 'get_time', arguments: '{"zone":"CET"}' } }] } }] },
  { choices: [{ delta: {}, finish_reason: 'tool_calls' }] },
  { choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 30 } } },
]

function sseOf (chunks: ChatAnswer[], stopSequences: string[] = []): string {
  const events = new MessagesEvents('vllm/qwen', stopSequences)
  return chunks.map((c) => events.push(c)).join('') + events.end()
}

t.test('a Messages request as a chat completion: system, content blocks, tool calls and results, tools, settings', async (t) => {
  const chat = chatRequestOf({
    model: 'vllm/qwen',
    system: [{ type: 'text', text: 'You are terse.' }, { type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'A cat.', signature: 'sig' }, { type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'cat' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a ' }, { type: 'text', text: 'cat' }] }, { type: 'text', text: 'And now?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'lookup', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'nothing', is_error: true }] },
      { role: 'assistant', content: 'plain' },
    ],
    tools: [
      { name: 'lookup', description: 'Looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
    ],
    tool_choice: { type: 'tool', name: 'lookup', disable_parallel_tool_use: true },
    max_tokens: 100, temperature: 0.5, top_p: 0.9, top_k: 40, repeat_penalty: 1.1, stop: ['END'],
    stop_sequences: ['\n\nHuman:', 'END'], stream: true, metadata: { user_id: 'u1' },
    thinking: { type: 'enabled', budget_tokens: 2048 },
  })
  t.same(chat, {
    model: 'vllm/qwen', max_tokens: 100, temperature: 0.5, top_p: 0.9, top_k: 40, repeat_penalty: 1.1,
    messages: [
      { role: 'system', content: 'You are terse.\n\nAnswer in French.' },
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }, { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } }] },
      { role: 'assistant', content: 'Let me look.', reasoning_content: 'A cat.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'a cat' },
      { role: 'user', content: 'And now?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'toolu_2', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'nothing' },
      { role: 'assistant', content: 'plain' },
    ],
    tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
    parallel_tool_calls: false,
    tool_choice: { type: 'function', function: { name: 'lookup' } },
    stop: ['END', '\n\nHuman:'],
    stream: true, stream_options: { include_usage: true },
    chat_template_kwargs: { enable_thinking: true }, thinking_budget_tokens: 2048,
  })

  const choices = ['auto', 'any', 'none'].map((type) => chatRequestOf({ messages: [], tool_choice: { type } }).tool_choice)
  t.same(choices, ['auto', 'required', 'none'])
  t.same(chatRequestOf({ messages: [], system: 'S', stream: false, thinking: { type: 'disabled' }, chat_template_kwargs: { enable_thinking: true, x: 1 } }), {
    messages: [{ role: 'system', content: 'S' }], stream: false, chat_template_kwargs: { enable_thinking: true, x: 1 },
  }, 'the client\'s own template settings win')
  t.same(chatRequestOf({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'x' } }] }] }] }).messages, [
    { role: 'tool', tool_call_id: 't', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,x' } }] },
  ], 'a tool result with an image keeps its parts')
})

t.test('a whole chat completion as an Anthropic message, as the SDK reads it', async (t) => {
  const chat: ChatAnswer = {
    id: 'chatcmpl-xyz',
    choices: [{ message: { content: 'It is sunny.', reasoning_content: 'Look it up.', tool_calls: [{ id: 'call_9', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }, { function: { name: 'broken', arguments: '{"cut' } }] }, finish_reason: 'tool_calls' }],
    usage: { prompt_tokens: 40, completion_tokens: 12, prompt_tokens_details: { cached_tokens: 32 } },
  }
  const text = JSON.stringify(messageOf(chat, 'vllm/qwen', []))
  const message = await sdkReading(text, false).messages.create(ASK)
  t.match(message, {
    id: 'msg_xyz', type: 'message', role: 'assistant', model: 'vllm/qwen', stop_reason: 'tool_use', stop_sequence: null,
    content: [
      { type: 'thinking', thinking: 'Look it up.', signature: '' },
      { type: 'text', text: 'It is sunny.' },
      { type: 'tool_use', id: 'call_9', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: /^toolu_[0-9a-f]{24}$/, name: 'broken', input: {} },
    ],
    usage: { input_tokens: 8, cache_read_input_tokens: 32, cache_creation_input_tokens: 0, output_tokens: 12 },
  })
  t.same(answerUsage(text), { prompt: 40, generated: 12 }, 'the surface counts the whole prompt, cached tokens included')
  t.equal(answerCachedTokens(text), 32)

  const stop = (choice: NonNullable<ChatAnswer['choices']>[number], sequences: string[] = []) => {
    const { stop_reason: reason, stop_sequence: sequence } = messageOf({ choices: [choice] }, 'm', sequences) as { stop_reason: string, stop_sequence: string | null }
    return [reason, sequence]
  }
  t.same(stop({ message: { content: 'a' }, finish_reason: 'stop' }), ['end_turn', null])
  t.same(stop({ message: { content: 'a' }, finish_reason: 'length' }), ['max_tokens', null])
  t.same(stop({ message: { content: 'a' }, finish_reason: 'content_filter' }), ['refusal', null])
  t.same(stop({ message: { content: 'a' }, finish_reason: 'stop', stop_reason: 'END' }, ['END']), ['stop_sequence', 'END'], 'vLLM names the stop string')
  t.same(stop({ message: { content: 'a' }, finish_reason: 'stop', matched_stop: 'END' }, ['END']), ['stop_sequence', 'END'], 'SGLang too')
  t.same(stop({ message: { content: 'a' }, finish_reason: 'stop', matched_stop: 151645 }, ['END']), ['end_turn', null], 'an end-of-turn token is no stop sequence')
  t.same(stop({ message: { tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'stop' }), ['tool_use', null], 'calls with "stop" (older Ollama)')
  t.same((messageOf({ choices: [{ message: { reasoning: 'hm', content: '' }, finish_reason: 'stop' }] }, 'm', []) as { content: unknown }).content, [{ type: 'thinking', thinking: 'hm', signature: '' }], 'Ollama\'s and newer vLLM\'s `reasoning`')
})

t.test('a chat stream as Anthropic\'s events: the SDK accumulates the same message', async (t) => {
  const sse = sseOf(CHUNKS)
  const stream = sdkReading(sse, true).messages.stream(ASK)
  const seen: string[] = []
  const texts: string[] = []
  stream.on('streamEvent', (event) => seen.push(event.type === 'content_block_delta' ? event.delta.type : event.type))
  stream.on('text', (text) => texts.push(text))
  const message = await stream.finalMessage()
  t.same(seen, [
    'message_start',
    'content_block_start', 'thinking_delta', 'thinking_delta', 'signature_delta', 'content_block_stop',
    'content_block_start', 'text_delta', 'text_delta', 'content_block_stop',
    'content_block_start', 'input_json_delta', 'input_json_delta', 'content_block_stop',
    'content_block_start', 'input_json_delta', 'content_block_stop',
    'message_delta', 'message_stop',
  ])
  t.same(texts, ['Checking ', 'the weather.'])
  t.same(message.content, [
    { type: 'thinking', thinking: 'Let me think.', signature: '' },
    { type: 'text', text: 'Checking the weather.' },
    { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool_use', id: 'call_2', name: 'get_time', input: { zone: 'CET' } },
  ])
  t.match(message, { id: 'msg_abc123', model: 'vllm/qwen', stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 20, cache_read_input_tokens: 30, output_tokens: 20 } })
  // What the surface reads from the stream's last bytes: the whole prompt and the cached part.
  const tail = sse.slice(-2048)
  t.same(answerUsage(tail), { prompt: 50, generated: 20 })
  t.equal(answerCachedTokens(tail), 30)
  t.ok(sse.endsWith('data: {"type":"message_stop"}\n\n'), 'the end the surface checks for')

  const stopped = await sdkReading(sseOf([
    { id: 'chatcmpl-1', choices: [{ delta: { content: 'one two' } }] },
    { choices: [{ delta: {}, finish_reason: 'stop', stop_reason: '\n\nHuman:' }] },
  ], ['\n\nHuman:']), true).messages.stream(ASK).finalMessage()
  t.match(stopped, { stop_reason: 'stop_sequence', stop_sequence: '\n\nHuman:', content: [{ type: 'text', text: 'one two' }], usage: { output_tokens: 0 } })
  const cut = await sdkReading(sseOf([{ choices: [{ delta: { content: 'x' }, finish_reason: 'length' }], usage: { prompt_tokens: 3, completion_tokens: 1 } }]), true).messages.stream(ASK).finalMessage()
  t.match(cut, { stop_reason: 'max_tokens', usage: { input_tokens: 3, output_tokens: 1 } }, 'one chunk with everything')
  t.throws(() => new MessagesEvents('m', []).end(), /the runtime ended the stream early/, 'no finish_reason: the upstream broke off')
})

t.test('relayed from a chat-only upstream: the client\'s model name, the sink opened with the first bytes, head and tail kept, backpressure', async (t) => {
  const fake = await chatOnly(t, { chunks: CHUNKS })
  const endpoint = endpointTo(t, fake.origin, 'Qwen/Qwen3-8B')
  const sink = collectingSink(true)
  let firstData = 0
  const progress: RelayProgress = { tailBytes: 2048, tail: Buffer.alloc(0), headBytes: 2048, firstData: () => { firstData++ } }
  await relayMessagesViaChat(endpoint, JSON.stringify({ ...ASK, stream: true, stop_sequences: ['END'] }), sink, progress, never)
  const sent = JSON.parse(fake.received[0]!.body) as Record<string, unknown>
  t.match(sent, { model: 'Qwen/Qwen3-8B', stream: true, stream_options: { include_usage: true }, stop: ['END'], messages: [{ role: 'user', content: 'weather?' }] })
  t.equal(fake.received[0]!.url, '/v1/chat/completions')
  t.same([sink.opened, firstData, sink.overruns], [1, 1, 0], 'opened once, first data once, nothing written while backed up')
  t.ok(sink.writes > 5 && sink.waits === sink.writes, `waited for the client after each of ${sink.writes} writes`)
  t.equal(sink.text(), sseOf(CHUNKS))
  t.match(progress.head!.toString(), /^event: message_start\ndata: \{"type":"message_start","message":\{"id":"msg_abc123",[^\n]*"model":"vllm\/qwen"/)
  t.ok(progress.tail.toString().endsWith('data: {"type":"message_stop"}\n\n'))
  t.same(answerUsage(progress.tail.toString()), { prompt: 50, generated: 20 })
})

t.test('relayed: failures before the first chunk are thrown with the sink closed; an upstream\'s error mid-stream is thrown after whole events', async (t) => {
  const run = async (answer: Parameters<typeof chatOnly>[1]): Promise<{ err: unknown, sink: ReturnType<typeof collectingSink> }> => {
    const fake = await chatOnly(t, answer)
    const endpoint = endpointTo(t, fake.origin, 'm')
    const sink = collectingSink()
    const err = await relayMessagesViaChat(endpoint, JSON.stringify({ ...ASK, stream: true }), sink, { tailBytes: 64, tail: Buffer.alloc(0) }, never).then(() => null, (e: unknown) => e)
    return { err, sink }
  }
  const empty = await run({ chunks: [] })
  t.match(empty.err, { message: 'the runtime ended the stream early' })
  t.equal(empty.sink.opened, 0, 'nothing went out: a real status (or another upstream) is still possible')

  const refused = await run({ chunks: [], whole: {} })
  t.equal(refused.sink.opened, 0)

  const broken = await run({ chunks: [{ id: 'c', choices: [{ delta: { content: 'par' } }] }, { error: { message: 'CUDA error: out of memory', code: 500 } }] })
  t.ok(broken.err instanceof RuntimeError)
  t.match(broken.err, { message: 'CUDA error: out of memory' })
  t.equal(broken.sink.opened, 1)
  t.match(broken.sink.text(), /"text_delta","text":"par"\}\}\n\n$/, 'what went out ends with a whole event: the surface\'s `event: error` follows')

  const vllmError = await run({ chunks: [{ object: 'error', message: 'The model does not exist.', code: 404 }] })
  t.match(vllmError.err, { message: 'The model does not exist.' })

  const cut = await run({ chunks: [{ id: 'c', choices: [{ delta: { content: 'par' } }] }], cut: true })
  t.match(cut.err, { message: 'the runtime ended the stream early' }, 'a body that ends before a finish_reason is a broken stream')
})

t.test('whole answers and token counts from a chat-only upstream', async (t) => {
  const fake = await chatOnly(t, { whole: { id: 'chatcmpl-w', choices: [{ message: { content: 'Bonjour' }, finish_reason: 'stop' }], usage: { prompt_tokens: 42, completion_tokens: 1 } } })
  const endpoint = endpointTo(t, fake.origin, 'remote-name')
  const text = await postMessagesViaChat(endpoint, '/v1/messages', { ...ASK, stream: false }, never)
  t.match(JSON.parse(text), { id: 'msg_w', model: 'vllm/qwen', content: [{ type: 'text', text: 'Bonjour' }], stop_reason: 'end_turn', usage: { input_tokens: 42, output_tokens: 1 } })
  t.match(JSON.parse(fake.received[0]!.body), { model: 'remote-name', stream: false, max_tokens: 64 })

  t.equal(await postMessagesViaChat(endpoint, '/v1/messages/count_tokens', { model: 'vllm/qwen', messages: ASK.messages, tools: [{ name: 'f', input_schema: { type: 'object' } }], stream: false }, never), '{"input_tokens":42}')
  t.match(JSON.parse(fake.received[1]!.body), { max_tokens: 1, stream: false, tools: [{ type: 'function', function: { name: 'f' } }] }, 'counted by asking for one token, tools and all')

  const silent = await chatOnly(t, { whole: { choices: [{ message: { content: 'x' }, finish_reason: 'stop' }] } })
  const quiet = endpointTo(t, silent.origin, 'm')
  await t.rejects(postMessagesViaChat(quiet, '/v1/messages/count_tokens', { model: 'm', messages: [] }, never), /the upstream counted no prompt tokens/)
})

t.test('isMissingSurface: 404 and 405 as engines word them, and nothing else', async (t) => {
  const answers: Array<[number, string, string, boolean]> = [
    [404, 'application/json', '{"detail":"Not Found"}', true],
    [405, 'application/json', '{"detail":"Method Not Allowed"}', true],
    [404, 'text/plain', '404 page not found', true],
    [404, 'application/json', '{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}', true],
    [404, 'application/json', '{"error":{"message":"model \\"x\\" not found, try pulling it first"}}', false],
    [400, 'application/json', '{"detail":"Not Found"}', false],
    [500, 'text/plain', 'boom', false],
  ]
  for (const [status, type, body, missing] of answers) {
    const fake = await fakeUpstream(t, (_req, res) => { res.writeHead(status, { 'content-type': type }); res.end(body) })
    const endpoint = endpointTo(t, fake.origin, 'm')
    const err = await endpoint.post('/v1/messages', ASK, never).catch((e: unknown) => e)
    t.equal(isMissingSurface(err), missing, `${status} ${body}`)
  }
  t.ok(isMissingSurface(new GatewayError(400, 'whatever it said', { code: 'runtime_rejected', details: { runtimeStatus: 405 } })), 'the status itself, where the error carries it')
  t.notOk(isMissingSurface(new GatewayError(400, 'Not Found', { code: 'runtime_rejected', details: { runtimeStatus: 400 } })))
  t.notOk(isMissingSurface(new GatewayError(400, 'model "x" not found', { code: 'runtime_rejected', details: { runtimeStatus: 404 } })), 'a 404 about the request')
  t.ok(isMissingSurface(new GatewayError(400, 'runtime answered 404', { code: 'runtime_rejected', details: { runtimeStatus: 404 } })))
  t.notOk(isMissingSurface(new Error('runtime answered 404')))
})

t.test('MessagesSupport: auto converts a path once the upstream lacks it, native never, convert always; one per upstream', async (t) => {
  const fake = await chatOnly(t, { chunks: CHUNKS, whole: { choices: [{ message: { content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 1 } } })
  const config = upstream({ name: 'sglang', url: fake.origin, kind: 'openai' })
  const endpoint = endpointTo(t, fake.origin)
  const support = MessagesSupport.of(config)
  t.equal(support, MessagesSupport.of(config), 'every model of the upstream shares it')
  t.equal(support.mode, 'auto', 'unset is auto')
  const urls = () => fake.received.splice(0).map((r) => r.url)

  const body = { ...ASK, stream: false }
  const native = () => endpoint.post('/v1/messages', body, never)
  t.match(JSON.parse(await support.post(endpoint, '/v1/messages', body, never, native)), { content: [{ text: 'ok' }] })
  t.same(urls(), ['/v1/messages', '/v1/chat/completions'], 'refused natively, then converted')
  await support.post(endpoint, '/v1/messages', body, never, native)
  t.same(urls(), ['/v1/chat/completions'], 'remembered: straight to the chat')

  // count_tokens is a path of its own: an upstream may have one and not the other.
  t.equal(await support.post(endpoint, '/v1/messages/count_tokens', body, never, () => endpoint.post('/v1/messages/count_tokens', body, never)), '{"input_tokens":7}')
  t.same(urls(), ['/v1/messages/count_tokens', '/v1/chat/completions'])

  // Streamed, on a fresh upstream: the native relay's 404 comes before its sink opened.
  const fresh = MessagesSupport.of(upstream({ url: fake.origin, kind: 'openai' }))
  const sink = collectingSink()
  const payload = JSON.stringify({ ...ASK, stream: true })
  await fresh.relay(endpoint, payload, sink, { tailBytes: 64, tail: Buffer.alloc(0) }, never, (s) => endpoint.relay('/v1/messages', payload, s, { tailBytes: 64, tail: Buffer.alloc(0) }, never))
  t.same(urls(), ['/v1/messages', '/v1/chat/completions'])
  t.equal(sink.opened, 1)
  t.equal(sink.text(), sseOf(CHUNKS))
  t.ok(fresh.converts('/v1/messages'))

  // A native stream that failed after its head went out is the client's already: no second answer.
  const opened = new MessagesSupport('auto')
  const late = new GatewayError(400, 'runtime answered 404', { code: 'runtime_rejected' })
  await t.rejects(opened.relay(endpoint, payload, collectingSink(), { tailBytes: 64, tail: Buffer.alloc(0) }, never, async (s) => { s.open(); throw late }), late)
  t.notOk(opened.converts('/v1/messages'))
  t.same(urls(), [])

  // Other refusals are the request's: thrown, not remembered.
  const auto = new MessagesSupport('auto')
  const bad = new GatewayError(400, 'bad grammar', { code: 'runtime_rejected' })
  await t.rejects(auto.post(endpoint, '/v1/messages', body, never, () => Promise.reject(bad)), bad)
  t.notOk(auto.converts('/v1/messages'))

  const nativeOnly = new MessagesSupport('native')
  await t.rejects(nativeOnly.post(endpoint, '/v1/messages', body, never, native), /runtime answered 404/)
  t.notOk(nativeOnly.converts('/v1/messages'))
  t.same(urls(), ['/v1/messages'])

  const always = new MessagesSupport('convert')
  await always.post(endpoint, '/v1/messages', body, never, () => t.fail('never native') as never)
  t.same(urls(), ['/v1/chat/completions'])
  t.equal(MessagesSupport.of(upstream({ url: fake.origin, kind: 'openai', messages: 'convert' })).mode, 'convert')
  t.same(['/v1/messages', '/v1/messages/count_tokens', '/v1/chat/completions', '/v1/messages/x'].map(isMessagesPath), [true, true, false, false], 'the paths an upstream may lack')
})
