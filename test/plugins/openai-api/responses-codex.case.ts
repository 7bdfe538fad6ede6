import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'

// Codex's own requests (test/fixtures/agents/codex, captured from Codex 0.169.0) replayed against the real gateway
// and llama-server: developer messages instead of instructions, namespace and web_search tools beside its function
// tools, store: false, reasoning, include, prompt_cache_key, client_metadata; on the second turn the whole input
// again with its function_call and function_call_output items. Codex reads the stream's events as OpenAI sends them.
//
// Changed for the fixtures: `model` is the fixture's name, and `options` sets the context (the fixtures were trained
// for 4096 tokens) and a seed. The first developer message (Codex's 17,000-character system prompt) is cut to its
// first 2,000 characters: whole, the first turn is about 6,100 tokens in Qwen's vocabulary, more than the fixtures
// hold. Everything else is as Codex sent it.

const server = serveRealisticModels(t, { 'acme/caller': 'caller', 'acme/qwen': 'qwen25' })
const FIXTURES = new URL('../../fixtures/agents/codex/', import.meta.url)
const SYSTEM_PROMPT_CHARS = 2000

interface Capture { headers: Record<string, string>, body: Record<string, any> }
interface Event { name: string, data: Record<string, any> }

function capture (file: string): Capture {
  const captured = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Capture
  const developer = captured.body.input[0]
  developer.content[0].text = developer.content[0].text.slice(0, SYSTEM_PROMPT_CHARS)
  return captured
}

/** Sends a captured request with Codex's own headers (its key and the stub's host and length aside). */
async function replay (captured: Capture, model: string, options: Record<string, unknown>): Promise<{ status: number, type: string | null, events: Event[] }> {
  const { host, 'content-length': length, authorization, ...headers } = captured.headers
  const res = await post(`${(await server).url}/v1/responses`, { ...captured.body, model, options }, headers)
  const text = await res.text()
  const events = res.status !== 200
    ? []
    : text.trim().split('\n\n').filter((e) => !e.startsWith(': ')).map((e) => {
      const [name, data] = e.split('\n')
      return { name: name!.replace(/^event: /, ''), data: JSON.parse(data!.replace(/^data: /, '')) }
    })
  return { status: res.status, type: res.headers.get('content-type'), events }
}

/** What Codex needs of every stream: named events numbered from 0, the response last, with all its usage. */
function checkStream (t: Test, events: Event[], last: string): Record<string, any> {
  t.same(events.map((e) => e.name), events.map((e) => e.data.type), 'each event named by its type')
  t.same(events.map((e) => e.data.sequence_number), events.map((_, i) => i), 'sequence_number 0, 1, 2 ...')
  t.same(events.slice(0, 2).map((e) => e.name), ['response.created', 'response.in_progress'])
  const end = events.at(-1)!
  t.equal(end.name, last)
  const { usage } = end.data.response
  t.match(usage, { input_tokens: Number, input_tokens_details: { cached_tokens: Number }, output_tokens: Number, output_tokens_details: { reasoning_tokens: 0 } }, 'usage as Codex reads it')
  t.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens)
  return end.data.response
}

const functionNames = (body: Capture['body']): string[] => body.tools.filter((tool: any) => tool.type === 'function').map((tool: any) => tool.name)

t.test('Codex\'s first turn, to the tool caller: a function_call item, its arguments streamed, response.completed', async (t) => {
  const turn = capture('tool-turn1.json')
  const { status, type, events } = await replay(turn, 'acme/caller', { num_ctx: 4096, num_predict: 200, seed: 1 })
  t.equal(status, 200)
  t.match(type, /^text\/event-stream/)
  const response = checkStream(t, events, 'response.completed')
  t.same(events.map((e) => e.name).filter((n) => !n.endsWith('.delta')), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.done',
    'response.output_item.done', 'response.completed',
  ])
  const call = response.output[0]
  t.match(call, { type: 'function_call', status: 'completed', id: /^fc_/, call_id: /^call_/ })
  t.ok(functionNames(turn.body).includes(call.name), `a call to one of Codex's function tools: ${call.name}`)
  t.same(JSON.parse(call.arguments), JSON.parse(events.filter((e) => e.name === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('')), 'the arguments: JSON, the deltas joined')
  t.match(events[2]!.data, { output_index: 0, item: { type: 'function_call', name: call.name, call_id: call.call_id, arguments: '' } })
  t.equal(response.store, false, 'store: false, as Codex asked')
  const stored = await fetch(`${(await server).url}/v1/responses/${response.id}`)
  t.equal(stored.status, 404, 'and nothing was kept')
})

t.test('Codex\'s second turn: the whole input again with function_call and function_call_output, completed', async (t) => {
  const first = checkStream(t, (await replay(capture('tool-turn1.json'), 'acme/caller', { num_ctx: 4096, num_predict: 200, seed: 1 })).events, 'response.completed')
  const turn = capture('tool-turn2.json')
  t.same(turn.body.input.slice(-2).map((item: any) => item.type), ['function_call', 'function_call_output'])
  const { status, events } = await replay(turn, 'acme/caller', { num_ctx: 4096, num_predict: 200, seed: 1 })
  t.equal(status, 200)
  const response = checkStream(t, events, 'response.completed')
  t.ok(response.usage.input_tokens > first.usage.input_tokens + 20, `the call and its output reached the prompt: ${first.usage.input_tokens} -> ${response.usage.input_tokens} tokens`)
  t.ok(functionNames(turn.body).includes(response.output[0].name), 'the tool caller calls again')
})

t.test('Codex\'s text turn to a model that writes text: completed; developer messages are the system prompt', async (t) => {
  const turn = capture('text.json')
  // The tiny qwen writes newlines only, which llama-server's tool-call parser drops as blank text; a stop at the
  // first newline ends the turn as a model's end of turn would.
  const { status, events } = await replay(turn, 'acme/qwen', { num_ctx: 4096, stop: ['\n'] })
  t.equal(status, 200)
  const response = checkStream(t, events, 'response.completed')
  t.equal(response.status, 'completed')

  // The two developer messages that open Codex's input read as one system prompt: the same tokens as `instructions`.
  const [rules, skills, ...rest] = turn.body.input
  const asInstructions = { ...turn.body, stream: false, model: 'acme/qwen', options: { num_ctx: 4096, stop: ['\n'] }, input: rest, instructions: `${rules.content[0].text}\n\n${skills.content.map((p: any) => p.text).join('\n')}` }
  const whole = await (await post(`${(await server).url}/v1/responses`, asInstructions)).json() as Record<string, any>
  t.equal(whole.usage.input_tokens, response.usage.input_tokens, `${whole.usage.input_tokens} tokens either way`)
})
