import { BadRequestError } from '../../core/base/errors.js'
import type { ForcedCall } from '../inference/forced-call-schema.js'
import type { ResponseItem } from './response-store.js'

type Json = Record<string, unknown>

/** A chat message as llama-server's /v1/chat/completions reads it. */
export interface ChatMessage {
  role: string
  content: string | Json[]
  tool_calls?: Array<{ id: string, type: 'function', function: { name: string, arguments: string } }>
  tool_call_id?: string
  reasoning_content?: string
}

/** The fields of a Responses request that shape the chat request (the rest are options or the gateway's). */
export interface ResponsesFields {
  instructions?: string | null
  tools?: Json[]
  tool_choice?: unknown
  parallel_tool_calls?: boolean | null
  text?: { format?: Json } | null
  reasoning?: { effort?: string | null } | null
}

/** What a Responses request becomes for llama-server's chat completions: its template, tools and grammar. */
export interface ChatRequest {
  messages: ChatMessage[]
  tools?: Json[]
  tool_choice?: 'auto' | 'none' | 'required'
  parallel_tool_calls?: boolean
  response_format?: Json
  /** The template's reasoning effort, as on chat completions (`none` turns reasoning off). */
  reasoning_effort?: string
}

/** A Responses request as a chat: the chat request, and the call its tool choice forces (null for none). */
export interface TranslatedChat extends ChatRequest {
  forced: ForcedCall | null
}

/** A request's `input` as a list of items: a string is one user message. */
export function inputItems (input: string | Json[]): ResponseItem[] {
  return typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input
}

/**
 * Translates a Responses request (its conversation: the earlier turns' items, then its own input) into a chat
 * request. What chat completions has no place for is dropped, not refused: tools other than functions (Codex's
 * `namespace` and `web_search`), items the model never produced here (web searches, hosted tools' calls).
 * `instructions` and the system and developer messages that open the conversation become one system message,
 * since many chat templates take a system message only first; a developer message later is a system message.
 * Reasoning items go back to the assistant message that follows them as `reasoning_content`.
 * @throws BadRequestError for an item or part that cannot be read (an input_file, a message without content)
 */
export function responsesToChat (fields: ResponsesFields, history: readonly ResponseItem[], input: readonly ResponseItem[]): TranslatedChat {
  const messages: ChatMessage[] = []
  const system: string[] = []
  if (typeof fields.instructions === 'string' && fields.instructions !== '') system.push(fields.instructions)
  let reasoning: string | null = null
  // The assistant message the current turn's items go into: output text, calls and reasoning of one answer are one message.
  let assistant: ChatMessage | null = null
  const items = [...history, ...input]
  items.forEach((item, i) => {
    const where = i < history.length ? `item ${i} of the earlier conversation` : `input item ${i - history.length}`
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new BadRequestError(`${where} is not an object`, 'invalid_input')
    const type = item.type ?? (item.role !== undefined || item.content !== undefined ? 'message' : undefined)
    switch (type) {
      case 'message': {
        const role = item.role ?? 'user'
        if (role === 'assistant') {
          assistant = openAssistant(messages, assistant, reasoning)
          reasoning = null
          assistant.content = joinText([assistant.content as string, textOf(item.content, where)].filter((t) => t !== ''))
          return
        }
        assistant = null
        if (role === 'system' || role === 'developer') {
          const text = textOf(item.content, where)
          if (messages.length === 0) system.push(text)
          else messages.push({ role: 'system', content: text })
          return
        }
        if (role !== 'user') throw new BadRequestError(`${where} has role ${JSON.stringify(role)}: expected user, assistant, system or developer`, 'invalid_input')
        messages.push({ role: 'user', content: userContent(item.content, where) })
        return
      }
      case 'function_call': {
        const callId = stringField(item, 'call_id', where)
        const name = stringField(item, 'name', where)
        const args = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {})
        assistant = openAssistant(messages, assistant, reasoning)
        reasoning = null
        ;(assistant.tool_calls ??= []).push({ id: callId, type: 'function', function: { name, arguments: args } })
        return
      }
      case 'function_call_output': {
        assistant = null
        const output = item.output
        const content = typeof output === 'string' ? output : userContent(output, where)
        messages.push({ role: 'tool', tool_call_id: stringField(item, 'call_id', where), content })
        return
      }
      case 'reasoning': {
        const text = reasoningText(item)
        if (text !== '') reasoning = reasoning === null ? text : `${reasoning}\n${text}`
        return
      }
      case undefined:
        throw new BadRequestError(`${where} is not a message and has no type`, 'invalid_input')
      default:
        // Items of OpenAI's hosted tools (web_search_call, file_search_call, ...) and custom tools: the model here
        // never made them and chat completions has no place for them.
        assistant = null
    }
  })
  if (system.length > 0) messages.unshift({ role: 'system', content: system.join('\n\n') })
  if (messages.every((m) => m.role === 'system')) throw new BadRequestError('the input holds no message for the model to answer', 'invalid_input')
  const effort = fields.reasoning?.effort
  return { messages, ...chatTools(fields), ...(typeof effort === 'string' ? { reasoning_effort: effort } : {}) }
}

function openAssistant (messages: ChatMessage[], current: ChatMessage | null, reasoning: string | null): ChatMessage {
  const message = current ?? { role: 'assistant', content: '' }
  if (current === null) messages.push(message)
  if (reasoning !== null) message.reasoning_content = reasoning
  return message
}

/**
 * The tools, tool_choice, parallel_tool_calls and text.format of a request, as chat completions has them, and the
 * call the tool choice forces: `required`, a named function (called once) or `allowed_tools` in `required` mode.
 */
function chatTools (fields: ResponsesFields): Omit<TranslatedChat, 'messages'> {
  const out: Omit<TranslatedChat, 'messages'> = { forced: null }
  let once = false
  let tools = (fields.tools ?? []).filter((tool) => tool.type === 'function').map((tool, i) => {
    if (typeof tool.name !== 'string' || tool.name === '') throw new BadRequestError(`function tool ${i} has no name`, 'invalid_tools')
    const fn: Json = { name: tool.name, parameters: tool.parameters ?? { type: 'object', properties: {} } }
    if (typeof tool.description === 'string') fn.description = tool.description
    return { type: 'function', function: fn }
  })
  // llama-server reads tool_choice as a string only: a named function is "required" among that function alone,
  // allowed_tools the same among those it allows.
  const choice = fields.tool_choice as Json | string | undefined | null
  if (choice === 'auto' || choice === 'none' || choice === 'required') out.tool_choice = choice
  else if (choice !== null && typeof choice === 'object') {
    if (choice.type === 'function' && typeof choice.name === 'string') {
      tools = tools.filter((tool) => tool.function.name === choice.name)
      out.tool_choice = 'required'
      once = true
    } else if (choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
      const allowed = new Set((choice.tools as Json[]).map((t) => t.name))
      tools = tools.filter((tool) => allowed.has(tool.function.name))
      if (choice.mode === 'required') out.tool_choice = 'required'
    }
  }
  if (tools.length > 0) {
    out.tools = tools
    if (typeof fields.parallel_tool_calls === 'boolean') out.parallel_tool_calls = fields.parallel_tool_calls
    if (out.tool_choice === 'required') {
      const callable = tools.map((tool) => ({ name: tool.function.name as string, parameters: tool.function.parameters as Json }))
      out.forced = { tools: callable, parallel: !once && fields.parallel_tool_calls !== false }
    }
  } else delete out.tool_choice
  const format = fields.text?.format
  if (format?.type === 'json_schema') {
    out.response_format = { type: 'json_schema', json_schema: { name: format.name ?? 'response', schema: format.schema ?? {}, ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}) } }
  } else if (format?.type === 'json_object') out.response_format = { type: 'json_object' }
  return out
}

/** A user message's or a tool output's content: a string, or parts as chat completions has them (images included). */
function userContent (content: unknown, where: string): string | Json[] {
  if (typeof content === 'string') return content
  return partsOf(content, where).map((part) => {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
        return { type: 'text', text: textField(part, 'text', where) }
      case 'input_image':
        if (typeof part.image_url !== 'string') throw new BadRequestError(`an input_image of ${where} has no image_url (file ids are not supported here)`, 'invalid_image')
        return { type: 'image_url', image_url: { url: part.image_url } }
      case 'input_audio':
        // Chat completions' part, as the Responses API has it too; checked with the chat's (images.ts).
        return { type: 'input_audio', input_audio: part.input_audio }
      case 'refusal':
        return { type: 'text', text: textField(part, 'refusal', where) }
      default:
        throw new BadRequestError(`${where} has a content part of type ${JSON.stringify(part.type)}: only input_text, input_image and input_audio are supported here`, 'unsupported_content')
    }
  })
}

/** The text of a system, developer or assistant message: its text parts joined as llama-server joins them. */
function textOf (content: unknown, where: string): string {
  if (typeof content === 'string') return content
  return joinText(partsOf(content, where).map((part) => {
    if (part.type === 'refusal') return textField(part, 'refusal', where)
    if (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') return textField(part, 'text', where)
    throw new BadRequestError(`${where} has a content part of type ${JSON.stringify(part.type)} where only text is read`, 'unsupported_content')
  }))
}

function partsOf (content: unknown, where: string): Json[] {
  if (!Array.isArray(content)) throw new BadRequestError(`${where} has no content: expected a string or a list of parts`, 'invalid_input')
  for (const part of content) {
    if (part === null || typeof part !== 'object' || Array.isArray(part)) throw new BadRequestError(`${where} has a content part that is not an object`, 'invalid_input')
  }
  return content as Json[]
}

function reasoningText (item: Json): string {
  const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : item.summary
  if (!Array.isArray(parts)) return ''
  return joinText(parts.map((p) => (typeof (p as Json)?.text === 'string' ? (p as Json).text as string : '')).filter((t) => t !== ''))
}

function joinText (texts: string[]): string {
  return texts.join('\n')
}

function textField (part: Json, key: string, where: string): string {
  const text = part[key]
  if (typeof text !== 'string') throw new BadRequestError(`a ${String(part.type)} part of ${where} has no ${key}`, 'invalid_input')
  return text
}

function stringField (item: Json, key: string, where: string): string {
  const value = item[key]
  if (typeof value !== 'string' || value === '') throw new BadRequestError(`${where} (${String(item.type)}) has no ${key}`, 'invalid_input')
  return value
}
