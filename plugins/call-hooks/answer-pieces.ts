import type { CallPiece } from '../../core/platform/call-hooks.js'
import { eventBytes } from '../../runtimes/index.js'

// Where the pieces of an answer sit in llama-server's shapes (its own, OpenAI's and Anthropic's), read and written
// for call hooks (hooked-call.ts): every surface's answer passes one of these paths on its way to the client.

type Json = Record<string, any>

/** The paths of a model's server that generate an answer, and so go through the call hooks. */
export const GENERATING_PATHS: ReadonlySet<string> = new Set(['/v1/chat/completions', '/v1/completions', '/completion', '/infill', '/v1/messages'])

/** One piece of an event or whole answer, where it sits in it. */
export interface PieceSlot { kind: CallPiece['kind'], text: string, replaceText(text: string): void }

function slot (kind: CallPiece['kind'], holder: Json | undefined, key: string, into: PieceSlot[]): void {
  const text = holder?.[key]
  if (typeof text === 'string' && text !== '') into.push({ kind, text, replaceText: (value) => { holder![key] = value } })
}

/** The pieces a streamed event carries (a text delta, reasoning, a call's arguments), in the order they read. */
export function eventPieces (path: string, event: Json): PieceSlot[] {
  const pieces: PieceSlot[] = []
  if (path === '/v1/chat/completions') {
    const delta = event.choices?.[0]?.delta
    slot('reasoning', delta, 'reasoning_content', pieces)
    slot('text', delta, 'content', pieces)
    for (const call of Array.isArray(delta?.tool_calls) ? delta.tool_calls : []) slot('tool_call', call?.function, 'arguments', pieces)
  } else if (path === '/v1/completions') {
    slot('text', event.choices?.[0], 'text', pieces)
  } else if (path === '/v1/messages') {
    if (event.type !== 'content_block_delta') return pieces
    const delta = event.delta
    if (delta?.type === 'text_delta') slot('text', delta, 'text', pieces)
    else if (delta?.type === 'thinking_delta') slot('reasoning', delta, 'thinking', pieces)
    else if (delta?.type === 'input_json_delta') slot('tool_call', delta, 'partial_json', pieces)
  } else {
    slot('text', event, 'content', pieces)
  }
  return pieces
}

/** The pieces of a whole answer: its reasoning, its text, each call's arguments (Anthropic's calls are objects: none). */
export function wholePieces (path: string, answer: Json): PieceSlot[] {
  const pieces: PieceSlot[] = []
  if (path === '/v1/chat/completions') {
    const message = answer.choices?.[0]?.message
    slot('reasoning', message, 'reasoning_content', pieces)
    slot('text', message, 'content', pieces)
    for (const call of Array.isArray(message?.tool_calls) ? message.tool_calls : []) slot('tool_call', call?.function, 'arguments', pieces)
  } else if (path === '/v1/messages') {
    for (const block of Array.isArray(answer.content) ? answer.content : []) {
      if (block?.type === 'text') slot('text', block, 'text', pieces)
      else if (block?.type === 'thinking') slot('reasoning', block, 'thinking', pieces)
    }
  } else {
    return eventPieces(path, answer)
  }
  return pieces
}

/** Token counts an event or answer reports (OpenAI's usage, Anthropic's, llama-server's own timings), into `into`. */
export function readUsage (event: Json, into: { promptTokens: number | null, completionTokens: number | null }): void {
  const usage = event.usage ?? event.message?.usage
  const prompt = usage?.prompt_tokens ?? usage?.input_tokens ?? event.tokens_evaluated
  const generated = usage?.completion_tokens ?? usage?.output_tokens ?? event.tokens_predicted
  if (typeof prompt === 'number') into.promptTokens = prompt
  if (typeof generated === 'number') into.completionTokens = generated
  const timings = event.timings
  if (typeof timings?.prompt_n === 'number' && typeof prompt !== 'number') into.promptTokens = timings.prompt_n + (timings.cache_n ?? 0)
  if (typeof timings?.predicted_n === 'number' && typeof generated !== 'number') into.completionTokens = timings.predicted_n
}

/** Whether an event is the one that says the answer finished (after which the stream only closes). */
export function endsAnswer (path: string, event: Json): boolean {
  if (path === '/v1/messages') return event.type === 'message_stop'
  if (path === '/completion' || path === '/infill') return event.stop === true
  return typeof event.choices?.[0]?.finish_reason === 'string'
}

/** Whether an event tells the client the answer finished: the end, or Anthropic's message_delta that says why before it. */
export function saysFinished (path: string, event: Json): boolean {
  return endsAnswer(path, event) || (path === '/v1/messages' && event.type === 'message_delta')
}

/**
 * The events that end an answer a hook cut, in the path's own shape, as if the model had stopped there: each surface
 * then closes its answer as it does a finished one. `last`: the last event that went out; `open`: Anthropic's content
 * block still open, if any; `generated`: the pieces sent.
 */
export function cutEvents (path: string, last: Json | null, open: number | null, generated: number): Json[] {
  const head = { id: last?.id, object: last?.object, created: last?.created, model: last?.model }
  switch (path) {
    case '/v1/chat/completions': return [{ ...head, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]
    case '/v1/completions': return [{ ...head, choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop' }] }]
    case '/v1/messages': return [
      ...(open !== null ? [{ type: 'content_block_stop', index: open }] : []),
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: generated } },
      { type: 'message_stop' },
    ]
    default: return [{ content: '', stop: true, stop_type: 'eos' }]
  }
}

/** An event as SSE text in the path's framing (Anthropic's named events). */
export function sseEvent (path: string, event: Json): string {
  return eventBytes(event, path === '/v1/messages' ? event.type : null).toString('utf8')
}

/** What a finished stream of the path ends with after its last event (OpenAI's `[DONE]`), or ''. */
export function streamEnd (path: string): string {
  return path === '/v1/chat/completions' || path === '/v1/completions' ? 'data: [DONE]\n\n' : ''
}

/**
 * Text the `end` hooks released at an answer's end, added where it goes out last: to the text the event or whole
 * answer already carries (its last text piece), else as what carries it (a whole answer's text). False where a
 * stream's event has no text: the text then goes in events of its own before it (`releasedEvents`).
 */
export function addReleased (path: string, answer: Json, whole: boolean, text: string): boolean {
  const last = (whole ? wholePieces(path, answer) : eventPieces(path, answer)).findLast((slot) => slot.kind === 'text')
  if (last !== undefined) {
    last.replaceText(last.text + text)
    return true
  }
  if (!whole) return false
  if (path === '/v1/chat/completions') {
    const message = answer.choices?.[0]?.message
    if (message === undefined) return false
    message.content = text
  } else if (path === '/v1/messages') {
    if (!Array.isArray(answer.content)) return false
    answer.content.push({ type: 'text', text })
  } else if (path === '/v1/completions') {
    if (answer.choices?.[0] === undefined) return false
    answer.choices[0].text = text
  } else {
    answer.content = text
  }
  return true
}

/**
 * The events that carry text the `end` hooks released, in the path's shape, to go before `finishing` (the event that
 * says the answer finished, whose ids they take): Anthropic's, a text block of its own at `index`.
 */
export function releasedEvents (path: string, finishing: Json, index: number, text: string): Json[] {
  const head = { id: finishing.id, object: finishing.object, created: finishing.created, model: finishing.model }
  switch (path) {
    case '/v1/chat/completions': return [{ ...head, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }]
    case '/v1/completions': return [{ ...head, choices: [{ index: 0, text, logprobs: null, finish_reason: null }] }]
    case '/v1/messages': return [
      { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
      { type: 'content_block_stop', index },
    ]
    default: return [{ content: text, stop: false }]
  }
}
