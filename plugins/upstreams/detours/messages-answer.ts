import { randomBytes } from 'node:crypto'
import { tokenCount } from '../../../runtimes/index.js'

/** The part of a chat completion (or of one chunk of a stream) read here. */
export interface ChatAnswer {
  id?: string
  choices?: Array<{
    message?: ChatDelta
    delta?: ChatDelta
    finish_reason?: string | null
    /** vLLM's: the stop string (or token id) that ended the answer; null at the end of a turn. */
    stop_reason?: string | number | null
    /** SGLang's: the same. */
    matched_stop?: string | number | null
  }>
  usage?: ChatUsage | null
}

export interface ChatDelta {
  content?: string | null
  /** llama-server's, SGLang's and older vLLM's reasoning. */
  reasoning_content?: string | null
  /** Ollama's and newer vLLM's name for it. */
  reasoning?: string | null
  tool_calls?: Array<{ index?: number, id?: string, function?: { name?: string, arguments?: unknown } }>
}

export interface ChatUsage {
  prompt_tokens?: number
  completion_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number } | null
}

/** Anthropic's usage: `input_tokens` leaves out the prompt tokens read from the cache, which are counted apart. */
export interface MessagesUsage {
  input_tokens: number
  cache_creation_input_tokens: number
  cache_read_input_tokens: number
  output_tokens: number
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal'

/** An Anthropic message id (`msg_...`), made from the chat completion's own where it has one. */
export function messageId (chatId: unknown): string {
  const own = typeof chatId === 'string' ? chatId.replace(/^chatcmpl-/, '').replace(/[^A-Za-z0-9_-]/g, '') : ''
  return `msg_${own !== '' ? own : randomBytes(12).toString('hex')}`
}

/** A tool call's id where the upstream gave none (Anthropic's are `toolu_...`): the client sends it back with the result. */
export function toolUseId (given: unknown): string {
  return typeof given === 'string' && given !== '' ? given : `toolu_${randomBytes(12).toString('hex')}`
}

/** The answer's usage in Anthropic's terms; zeros where the upstream said nothing. @throws for a count that cannot be */
export function messagesUsage (usage: ChatUsage | null | undefined): MessagesUsage {
  const prompt = tokenCount(usage?.prompt_tokens, 'usage.prompt_tokens') ?? 0
  const cached = Math.min(tokenCount(usage?.prompt_tokens_details?.cached_tokens, 'usage.prompt_tokens_details.cached_tokens') ?? 0, prompt)
  return { input_tokens: prompt - cached, cache_creation_input_tokens: 0, cache_read_input_tokens: cached, output_tokens: tokenCount(usage?.completion_tokens, 'usage.completion_tokens') ?? 0 }
}

/**
 * Why the answer ended, in Anthropic's words, and the stop sequence that ended it. Chat completions says only
 * `stop` for both a turn's end and a stop string; vLLM (`stop_reason`) and SGLang (`matched_stop`) name the
 * string, and where it is one of the request's stop sequences the answer stopped on it. Calls end as tool_use
 * also where an engine says `stop` beside them (older Ollama).
 */
export function stopReasonOf (finish: string | null | undefined, matched: unknown, stopSequences: readonly string[], calledTools: boolean): { stop_reason: StopReason, stop_sequence: string | null } {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null }
  if (finish === 'tool_calls' || finish === 'function_call' || calledTools) return { stop_reason: 'tool_use', stop_sequence: null }
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null }
  if (typeof matched === 'string' && stopSequences.includes(matched)) return { stop_reason: 'stop_sequence', stop_sequence: matched }
  return { stop_reason: 'end_turn', stop_sequence: null }
}

/** A tool call's arguments as the object Anthropic's `input` is: an engine that wrote no valid JSON gives `{}`, as llama-server's own conversion does. */
export function toolInput (args: unknown): Record<string, unknown> {
  if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args as Record<string, unknown>
  if (typeof args !== 'string' || args.trim() === '') return {}
  try {
    const input = JSON.parse(args) as unknown
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? input as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

/**
 * A whole chat completion as an Anthropic message, under `model` (the name the client asked for, not the
 * upstream's): thinking first, then text, then one tool_use block per call.
 */
export function messageOf (chat: ChatAnswer, model: string, stopSequences: readonly string[]): Record<string, unknown> {
  const choice = chat.choices?.[0]
  const message = choice?.message ?? {}
  const content: Array<Record<string, unknown>> = []
  const thinking = message.reasoning_content ?? message.reasoning
  // An empty signature: no upstream signs its thinking (llama-server's own Messages answers do the same).
  if (typeof thinking === 'string' && thinking !== '') content.push({ type: 'thinking', thinking, signature: '' })
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content })
  const calls = message.tool_calls ?? []
  for (const call of calls) content.push({ type: 'tool_use', id: toolUseId(call.id), name: call.function?.name ?? '', input: toolInput(call.function?.arguments) })
  return {
    id: messageId(chat.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopReasonOf(choice?.finish_reason, choice?.stop_reason ?? choice?.matched_stop, stopSequences, calls.length > 0),
    usage: messagesUsage(chat.usage),
  }
}
