import t from 'tap'
import { ndjsonEvents, post, serveRealisticModels, sseEvents, type InferenceServer } from '../helpers/inference.js'

// The `agent` fixture (test/helpers/realistic-models.ts) under the real llama-server, through the gateway, as a
// coding agent's loop meets it: with tools and no result yet it calls one, with the result it answers "Done",
// without tools it answers "Done", each time ending its turn. The prompt's last token is the same newline in
// all three; what tells them apart is attention in the first layer to markers earlier in the prompt
// (scripts/realistic-model.ts, `switches`), so the third test puts 20,000 tokens between marker and answer.

const MODEL = 'acme/agent'
const TOOLS = [
  { type: 'function', function: { name: 'Bash', description: 'Runs a shell command', parameters: { type: 'object', properties: { command: { type: 'string' }, timeout: { type: 'number' } }, required: ['command'] } } },
  { type: 'function', function: { name: 'Read', description: 'Reads a file', parameters: { type: 'object', properties: { file_path: { type: 'string' }, limit: { type: 'integer' } }, required: ['file_path'] } } },
]
const REQUIRED: Record<string, string> = { Bash: 'command', Read: 'file_path' }
const ASK = [{ role: 'user', content: 'List the files here.' }]
// Greedy, and room for a call (about 35 tokens) but not for a runaway.
const LIMITS = { temperature: 0, max_tokens: 80 }

let server: InferenceServer
t.before(async () => {
  server = await serveRealisticModels(t, { [MODEL]: 'agent' }, { default_options: { num_ctx: 32_768, num_thread: 1 } })
})

interface Turn { finish: string, content: string, calls: Array<{ name: string, arguments: string }> }

/** A /v1/chat/completions answer, whole or streamed (its deltas put together). */
async function openai (body: Record<string, unknown>, stream: boolean): Promise<Turn> {
  const res = await post(`${server.url}/v1/chat/completions`, { model: MODEL, ...LIMITS, ...body, stream })
  if (res.status !== 200) throw new Error(`/v1/chat/completions answered ${res.status}: ${await res.text()}`)
  if (!stream) {
    const { choices: [choice] } = await res.json() as { choices: Array<{ finish_reason: string, message: { content: string | null, tool_calls?: Array<{ function: { name: string, arguments: string } }> } }> }
    return { finish: choice!.finish_reason, content: choice!.message.content ?? '', calls: (choice!.message.tool_calls ?? []).map((c) => c.function) }
  }
  const turn: Turn = { finish: '', content: '', calls: [] }
  for (const event of await sseEvents(res)) {
    if (event === '[DONE]') continue
    const choice = (event as { choices: Array<{ finish_reason: string | null, delta: { content?: string | null, tool_calls?: Array<{ index: number, function?: { name?: string, arguments?: string } }> } }> }).choices[0]
    if (choice === undefined) continue
    turn.content += choice.delta.content ?? ''
    for (const part of choice.delta.tool_calls ?? []) {
      const call = turn.calls[part.index] ??= { name: '', arguments: '' }
      call.name += part.function?.name ?? ''
      call.arguments += part.function?.arguments ?? ''
    }
    if (choice.finish_reason) turn.finish = choice.finish_reason
  }
  return turn
}

/** An /api/chat answer, whole or streamed as NDJSON (an Ollama client's way). */
async function native (body: Record<string, unknown>, stream: boolean): Promise<Turn & { promptTokens: number, promptMs: number }> {
  const res = await post(`${server.url}/api/chat`, { model: MODEL, options: { temperature: 0, num_predict: LIMITS.max_tokens }, ...body, stream }, { accept: 'application/x-ndjson' })
  if (res.status !== 200) throw new Error(`/api/chat answered ${res.status}: ${await res.text()}`)
  type Event = { message?: { content: string, tool_calls?: Array<{ function: { name: string, arguments: unknown } }> }, done_reason?: string, prompt_eval_count?: number, prompt_eval_duration?: number }
  const events = (stream ? await ndjsonEvents(res) : [await res.json()]) as Event[]
  const last = events.at(-1)!
  return {
    finish: last.done_reason ?? '',
    content: events.map((e) => e.message?.content ?? '').join(''),
    calls: events.flatMap((e) => e.message?.tool_calls ?? []).map((c) => ({ name: c.function.name, arguments: JSON.stringify(c.function.arguments) })),
    promptTokens: last.prompt_eval_count ?? 0,
    promptMs: (last.prompt_eval_duration ?? 0) / 1e6,
  }
}

/** The turn is one call to one of TOOLS, its required argument there, and nothing else. */
function isCall (turn: Turn): string | null {
  if (turn.content !== '') return `text beside the call: ${JSON.stringify(turn.content)}`
  if (turn.calls.length !== 1) return `${turn.calls.length} calls`
  const [{ name, arguments: args }] = turn.calls as [Turn['calls'][number]]
  if (!(name in REQUIRED)) return `a call to ${name}, not one of the tools`
  return REQUIRED[name]! in JSON.parse(args) ? null : `${name} without ${REQUIRED[name]}: ${args}`
}

t.test('OpenAI chat: a call while tools are offered, "Done" once its result is in and without tools; whole and streamed', async (t) => {
  for (const stream of [false, true]) {
    const called = await openai({ messages: ASK, tools: TOOLS }, stream)
    t.equal(called.finish, 'tool_calls', `stream ${stream}: the call ends the turn`)
    t.equal(isCall(called), null, `stream ${stream}: ${JSON.stringify(called.calls)}`)
    const [call] = called.calls
    const answered = [...ASK,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: call }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'README.md\npackage.json' }]
    t.same(await openai({ messages: answered, tools: TOOLS }, stream), { finish: 'stop', content: 'Done', calls: [] }, `stream ${stream}: the result answered`)
    t.same(await openai({ messages: ASK }, stream), { finish: 'stop', content: 'Done', calls: [] }, `stream ${stream}: no tools, a short answer`)
  }
})

t.test('native chat: the same three turns, whole and streamed', async (t) => {
  for (const stream of [false, true]) {
    const called = await native({ messages: ASK, tools: TOOLS }, stream)
    t.equal(called.finish, 'stop', `stream ${stream}: Ollama says "stop" after a call`)
    t.equal(isCall(called), null, `stream ${stream}: ${JSON.stringify(called.calls)}`)
    const [call] = called.calls
    const answered = [...ASK,
      { role: 'assistant', content: '', tool_calls: [{ function: { name: call!.name, arguments: JSON.parse(call!.arguments) } }] },
      { role: 'tool', tool_name: call!.name, content: 'README.md\npackage.json' }]
    t.match(await native({ messages: answered, tools: TOOLS }, stream), { finish: 'stop', content: 'Done', calls: [] }, `stream ${stream}: the result answered`)
    t.match(await native({ messages: ASK }, stream), { finish: 'stop', content: 'Done', calls: [] }, `stream ${stream}: no tools, a short answer`)
  }
})

t.test('20,000 tokens of system prompt: trained on 32768 tokens, the model still calls a tool', async (t) => {
  const show = await (await post(`${server.url}/api/show`, { model: MODEL })).json() as { model_info: Record<string, unknown> }
  t.equal(show.model_info['qwen2.context_length'], 32_768, 'the trained context /api/show reports')
  // About 10 tokens a sentence: the size of Qwen Code's first request (19k tokens).
  const system = Array.from({ length: 1700 }, (_, i) => `Rule ${i}: keep the change small.`).join('\n')
  const messages = [{ role: 'system', content: system }, ...ASK]
  const long = await native({ messages, tools: TOOLS }, false)
  t.ok(long.promptTokens > 19_000 && long.promptTokens < 32_768, `${long.promptTokens} prompt tokens`)
  t.equal(isCall(long), null, `native: ${JSON.stringify(long.calls)}`)
  t.comment(`${long.promptTokens} prompt tokens evaluated in ${Math.round(long.promptMs)} ms on one thread`)
  // As an agent sends it, streamed; the prompt is now in llama-server's cache.
  const streamed = await openai({ messages, tools: TOOLS }, true)
  t.equal(streamed.finish, 'tool_calls')
  t.equal(isCall(streamed), null, `OpenAI, streamed: ${JSON.stringify(streamed.calls)}`)
})
