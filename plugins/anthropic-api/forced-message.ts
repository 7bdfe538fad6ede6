import { BadRequestError } from '../../core/base/errors.js'
import { eventBytes } from '../../runtimes/index.js'
import type { ForcedCall } from '../inference/forced-call-schema.js'
import type { ChatPiece, ChatShapes } from '../inference/parsed-chat-run.js'
import { messageUsage } from './message-spec-fields.js'

type Json = Record<string, unknown>

/** The Messages fields a tool choice reads. */
export interface MessagesToolFields {
  tools?: Array<{ name: string, input_schema?: object }>
  tool_choice?: unknown
}

/**
 * The call Anthropic's `tool_choice` forces: `{"type":"any"}` one of the tools, `{"type":"tool","name"}` that one
 * (once); several calls unless `disable_parallel_tool_use`. Null for `auto`, `none` or no tools.
 * @throws BadRequestError for a tool choice naming a tool the request does not offer
 */
export function messagesForcedCall (body: MessagesToolFields): ForcedCall | null {
  const choice = body.tool_choice as Json | undefined | null
  const tools = body.tools ?? []
  if (tools.length === 0 || choice === undefined || choice === null || typeof choice !== 'object') return null
  const callable = (tool: (typeof tools)[number]): ForcedCall['tools'][number] => ({ name: tool.name, parameters: (tool.input_schema as Json | undefined) ?? { type: 'object' } })
  const parallel = choice.disable_parallel_tool_use !== true
  if (choice.type === 'any') return { tools: tools.map(callable), parallel }
  if (choice.type !== 'tool') return null
  const tool = tools.find((t) => t.name === choice.name)
  if (tool === undefined) throw new BadRequestError(`tool_choice names tool ${JSON.stringify(choice.name)}, which is not among the request's tools`)
  return { tools: [callable(tool)], parallel: false }
}

const STOP_REASONS: Record<string, string> = { tool_calls: 'tool_use', length: 'max_tokens', stop: 'end_turn' }

/**
 * Anthropic's Message (whole or streamed) of a forced call, from llama-server's chat chunks made into calls
 * (plugins/inference/forced-call.ts): a thinking block for the reasoning, if any, then a tool_use block per call,
 * each started, filled and stopped in turn; message_start counts the prompt (from the first chunk's timings), and
 * message_delta the answer.
 */
export function forcedMessageShapes (): ChatShapes {
  let started = false
  let open: { index: number, type: string } | null = null
  let blocks = 0
  let usage: Json = {}
  let stopReason = 'end_turn'
  let ended = false
  const close = (): Buffer[] => {
    if (open === null) return []
    const events = open.type === 'thinking' ? [eventBytes({ type: 'content_block_delta', index: open.index, delta: { type: 'signature_delta', signature: '' } }, 'content_block_delta')] : []
    events.push(eventBytes({ type: 'content_block_stop', index: open.index }, 'content_block_stop'))
    open = null
    return events
  }
  const finish = (): Buffer[] => {
    if (ended) return []
    ended = true
    const delta = { stop_reason: stopReason, stop_sequence: null, container: null, stop_details: null }
    return [...close(), eventBytes({ type: 'message_delta', delta, usage: messageUsage(usage) }, 'message_delta')]
  }
  return {
    runtimeFields: { timings_per_token: true },
    whole: (answer) => wholeMessage(answer),
    chunk: (chunk: ChatPiece) => {
      const events: Buffer[] = []
      if (!started) {
        started = true
        const timings = chunk.timings ?? {}
        usage = { input_tokens: timings.prompt_n ?? 0, cache_read_input_tokens: timings.cache_n ?? 0, output_tokens: 0 }
        const message = { id: chunk.id, type: 'message', role: 'assistant', content: [], model: chunk.model, stop_reason: null, stop_sequence: null, container: null, stop_details: null, usage: messageUsage(usage) }
        events.push(eventBytes({ type: 'message_start', message }, 'message_start'))
      }
      const choice = chunk.choices?.[0]
      const delta = (choice?.delta ?? {}) as { reasoning_content?: string, tool_calls?: Array<{ id?: string, function?: { name?: string, arguments?: string } }> }
      if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
        if (open?.type !== 'thinking') events.push(...close(), startBlock(open = { index: blocks++, type: 'thinking' }, { type: 'thinking', thinking: '', signature: '' }))
        events.push(eventBytes({ type: 'content_block_delta', index: open.index, delta: { type: 'thinking_delta', thinking: delta.reasoning_content } }, 'content_block_delta'))
      }
      for (const call of delta.tool_calls ?? []) {
        if (call.id !== undefined) {
          events.push(...close(), startBlock(open = { index: blocks++, type: 'tool_use' }, { type: 'tool_use', id: call.id, name: call.function?.name ?? '', input: {}, caller: { type: 'direct' } }))
        }
        const args = call.function?.arguments
        if (open !== null && args !== undefined && args !== '') events.push(eventBytes({ type: 'content_block_delta', index: open.index, delta: { type: 'input_json_delta', partial_json: args } }, 'content_block_delta'))
      }
      if (choice?.finish_reason) stopReason = STOP_REASONS[choice.finish_reason] ?? 'end_turn'
      if (chunk.usage) {
        usage = { ...usage, output_tokens: chunk.usage.completion_tokens ?? 0 }
        events.push(...finish())
      }
      return Buffer.concat(events).toString('utf8')
    },
    end: () => Buffer.concat([...finish(), eventBytes({ type: 'message_stop' }, 'message_stop')]).toString('utf8'),
  }
}

function startBlock (block: { index: number, type: string }, contentBlock: Json): Buffer {
  return eventBytes({ type: 'content_block_start', index: block.index, content_block: contentBlock }, 'content_block_start')
}

/** The whole Message of a forced call's chat answer. */
function wholeMessage (answer: ChatPiece): Json {
  const choice = answer.choices?.[0]
  const message = (choice?.message ?? {}) as { reasoning_content?: string, tool_calls?: Array<{ id: string, function: { name: string, arguments: string } }> }
  const content: Json[] = []
  if (typeof message.reasoning_content === 'string' && message.reasoning_content !== '') content.push({ type: 'thinking', thinking: message.reasoning_content, signature: '' })
  for (const call of message.tool_calls ?? []) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parsed(call.function.arguments), caller: { type: 'direct' } })
  const prompt = answer.usage?.prompt_tokens ?? 0
  const cached = answer.usage?.prompt_tokens_details?.cached_tokens ?? 0
  return {
    id: answer.id,
    type: 'message',
    role: 'assistant',
    content,
    model: answer.model,
    stop_reason: STOP_REASONS[choice?.finish_reason ?? 'stop'] ?? 'end_turn',
    stop_sequence: null,
    container: null,
    stop_details: null,
    // Anthropic's input_tokens leave out what was read from the cache; OpenAI's prompt_tokens hold it.
    usage: messageUsage({ input_tokens: prompt - cached, cache_read_input_tokens: cached, output_tokens: answer.usage?.completion_tokens ?? 0 }),
  }
}

// A call cut at the token limit has arguments that do not parse: its input is what there is of it, an empty object.
function parsed (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return {}
  }
}
