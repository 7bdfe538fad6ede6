/** One content block of an Anthropic message, as far as it is read here. */
type Block = Record<string, unknown> & { type?: string }
type Part = Record<string, unknown>
type ChatMessage = Record<string, unknown> & { role: string }

// The Messages fields that have a chat completions counterpart of another shape, or none: the rest of a body
// (the sampling settings the gateway puts in llama-server's names, chat_template_kwargs, ...) goes as it is.
const CONVERTED = new Set(['system', 'messages', 'tools', 'tool_choice', 'stop_sequences', 'thinking', 'metadata', 'stream', 'stream_options'])

/**
 * An Anthropic Messages request body as an OpenAI chat completions body, for an upstream that has no
 * /v1/messages of its own: the system prompt becomes the first message; text and images become content parts;
 * an assistant's tool_use blocks its tool_calls (input as a JSON string) and a user's tool_result blocks `tool`
 * messages; tools, tool_choice and stop_sequences take their chat names; a stream asks for its usage at the end.
 * `thinking` goes to the template as `enable_thinking`, which llama-server, vLLM and SGLang pass to it, and its
 * budget as llama-server's `thinking_budget_tokens` (the others ignore a field they do not know); the client's
 * own `chat_template_kwargs` win. `metadata` has no counterpart and is dropped, and so are the blocks chat
 * completions has no part for (a PDF document; a text document goes as its text), as llama-server's own
 * conversion drops them.
 */
export function chatRequestOf (body: Record<string, unknown>): Record<string, unknown> {
  const chat: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(body)) if (!CONVERTED.has(key)) chat[key] = value
  const system = textOf(body.system)
  chat.messages = [...(system !== null ? [{ role: 'system', content: system }] : []), ...chatMessages(body.messages)]
  const tools = chatTools(body.tools)
  if (tools.length > 0) chat.tools = tools
  Object.assign(chat, chatToolChoice(body.tool_choice))
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) {
    // The gateway's own `stop` (a model's parameters, options.stop) and the request's both stop it.
    const given = typeof chat.stop === 'string' ? [chat.stop] : Array.isArray(chat.stop) ? chat.stop as unknown[] : []
    chat.stop = [...new Set([...given, ...body.stop_sequences])]
  }
  if (body.stream === true) {
    chat.stream = true
    chat.stream_options = { include_usage: true }
  } else if (body.stream === false) {
    chat.stream = false
  }
  Object.assign(chat, thinkingFields(body.thinking, body.chat_template_kwargs))
  return chat
}

/** The stop sequences a request asked for, to tell a stop on one of them from the end of a turn. */
export function stopSequencesOf (body: Record<string, unknown>): string[] {
  return Array.isArray(body.stop_sequences) ? body.stop_sequences.filter((s): s is string => typeof s === 'string') : []
}

function chatMessages (messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages)) return []
  return (messages as Array<{ role?: string, content?: unknown }>).flatMap((message) => {
    const role = message.role ?? 'user'
    if (!Array.isArray(message.content)) return [{ role, content: message.content ?? '' }]
    return role === 'assistant' ? [assistantMessage(message.content as Block[])] : userMessages(role, message.content as Block[])
  })
}

/** An assistant turn: its text, its thinking as `reasoning_content` (what llama-server's and vLLM's templates read), its tool calls. */
function assistantMessage (blocks: Block[]): ChatMessage {
  const text: string[] = []
  const thinking: string[] = []
  const calls: Part[] = []
  for (const block of blocks) {
    if (block.type === 'text' && typeof block.text === 'string') text.push(block.text)
    else if (block.type === 'thinking' && typeof block.thinking === 'string') thinking.push(block.thinking)
    else if (block.type === 'tool_use') {
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } })
    }
  }
  // An empty string rather than null beside tool calls: some templates measure the content.
  const message: ChatMessage = { role: 'assistant', content: text.join('') }
  if (thinking.length > 0) message.reasoning_content = thinking.join('')
  if (calls.length > 0) message.tool_calls = calls
  return message
}

/**
 * A user turn: its tool results first, each a `tool` message (chat completions wants them right after the
 * assistant's calls; Anthropic has them lead the user's content), then the rest as one message.
 */
function userMessages (role: string, blocks: Block[]): ChatMessage[] {
  const results: ChatMessage[] = []
  const parts: Part[] = []
  for (const block of blocks) {
    if (block.type === 'tool_result') results.push({ role: 'tool', tool_call_id: block.tool_use_id, content: toolResultContent(block.content) })
    else {
      const part = contentPart(block)
      if (part !== null) parts.push(part)
    }
  }
  if (parts.length === 0) return results
  return [...results, { role, content: contentOf(parts) }]
}

/** A tool's result as a `tool` message's content: text as a string, with images as parts. */
function toolResultContent (content: unknown): string | Part[] {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const parts = (content as Block[]).map(contentPart).filter((p): p is Part => p !== null)
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text).join('') : parts
}

function contentPart (block: Block): Part | null {
  if (block.type === 'text' && typeof block.text === 'string') return { type: 'text', text: block.text }
  if (block.type === 'image' || block.type === 'document') {
    const source = (block.source ?? {}) as Record<string, unknown>
    if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data }
    if (block.type !== 'image') return null
    if (source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${String(source.media_type ?? 'image/jpeg')};base64,${String(source.data ?? '')}` } }
    if (source.type === 'url') return { type: 'image_url', image_url: { url: source.url } }
  }
  return null
}

/** One text part as a plain string (what every engine takes), several or with images as parts. */
function contentOf (parts: Part[]): string | Part[] {
  return parts.length === 1 && parts[0]!.type === 'text' ? parts[0]!.text as string : parts
}

/** `system`, a string or text blocks, as one text; null when there is none. */
function textOf (system: unknown): string | null {
  if (typeof system === 'string') return system === '' ? null : system
  if (!Array.isArray(system)) return null
  const texts = (system as Block[]).filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string)
  return texts.length > 0 ? texts.join('\n\n') : null
}

/**
 * The client's own tools as functions. Anthropic's server tools (web search, code execution: a `type` and no
 * `input_schema`) run at Anthropic, which no upstream is: they are left out.
 */
function chatTools (tools: unknown): Part[] {
  if (!Array.isArray(tools)) return []
  return (tools as Block[]).filter((tool) => tool.input_schema !== undefined).map((tool) => ({
    type: 'function',
    function: { name: tool.name, ...(typeof tool.description === 'string' ? { description: tool.description } : {}), parameters: tool.input_schema },
  }))
}

function chatToolChoice (choice: unknown): Record<string, unknown> {
  if (typeof choice !== 'object' || choice === null) return {}
  const { type, name, disable_parallel_tool_use: single } = choice as { type?: string, name?: string, disable_parallel_tool_use?: boolean }
  const fields: Record<string, unknown> = single === true ? { parallel_tool_calls: false } : {}
  if (type === 'auto' || type === 'none') fields.tool_choice = type
  else if (type === 'any') fields.tool_choice = 'required'
  else if (type === 'tool') fields.tool_choice = { type: 'function', function: { name } }
  return fields
}

function thinkingFields (thinking: unknown, kwargs: unknown): Record<string, unknown> {
  const { type, budget_tokens: budget } = (thinking ?? {}) as { type?: string, budget_tokens?: number }
  if (type !== 'enabled' && type !== 'disabled') return {}
  const fields: Record<string, unknown> = { chat_template_kwargs: { enable_thinking: type === 'enabled', ...(kwargs as object | undefined) } }
  if (type === 'enabled' && typeof budget === 'number') fields.thinking_budget_tokens = budget
  return fields
}
