type Json = Record<string, unknown>
type Block = Json & { type: string }

/** A Messages request as far as it becomes a chat (after shapeMessages: system messages already folded). */
export interface MessagesRequest extends Json {
  model: string
  messages: Array<{ role: string, content: string | Block[] }>
  system?: string | Block[]
  tools?: Array<{ name: string, description?: string, input_schema?: object }>
  stop_sequences?: string[]
  thinking?: { type?: string, budget_tokens?: number }
}

/**
 * A Messages request as the chat request llama-server's own Anthropic path makes of it (server-chat.cpp,
 * server_chat_convert_anthropic_to_oai, which this follows block for block): the system prompt first, text and image
 * blocks as parts, tool_use blocks as the assistant's tool calls, tool_result blocks as tool messages after their
 * message, thinking as `reasoning_content`; tools as functions; stop_sequences as `stop`. The gateway's own fields
 * (`options`, `keep_alive`) and the sampling fields keep their names. Used where the gateway reads the answer itself
 * (a forced tool call), so that the model sees the same prompt either way.
 */
export function messagesToChat (body: MessagesRequest): Json {
  const { system, messages, tools, stop_sequences: stop, thinking, tool_choice: _choice, ...rest } = body
  const chat: Json[] = []
  if (system !== undefined && system !== null) {
    chat.push({ role: 'system', content: typeof system === 'string' ? system : system.filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('') })
  }
  for (const message of messages) chat.push(...chatMessages(message))
  const out: Json = { ...rest, messages: chat }
  if (tools !== undefined) out.tools = tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description ?? '', parameters: tool.input_schema ?? {} } }))
  if (stop !== undefined) out.stop = stop
  if (thinking?.type === 'enabled') out.thinking_budget_tokens = thinking.budget_tokens ?? 10000
  return out
}

function chatMessages ({ role, content }: { role: string, content: string | Block[] }): Json[] {
  if (typeof content === 'string') return [{ role, content }]
  const parts: Json[] = []
  const calls: Json[] = []
  const results: Json[] = []
  let reasoning = ''
  for (const block of content) {
    switch (block.type) {
      case 'text':
        parts.push(block)
        break
      case 'thinking':
        reasoning += typeof block.thinking === 'string' ? block.thinking : ''
        break
      case 'image': {
        const url = imageUrl(block.source as Json | undefined)
        if (url !== null) parts.push({ type: 'image_url', image_url: { url } })
        break
      }
      case 'tool_use':
        calls.push({ id: String(block.id ?? ''), type: 'function', function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) } })
        break
      case 'tool_result':
        results.push({ role: 'tool', tool_call_id: String(block.tool_use_id ?? ''), content: resultContent(block.content) })
        break
    }
  }
  const out: Json[] = []
  if (parts.length > 0 || calls.length > 0 || reasoning !== '') {
    const message: Json = { role, content: parts.length > 0 ? parts : '' }
    if (calls.length > 0) message.tool_calls = calls
    if (reasoning !== '') message.reasoning_content = reasoning
    out.push(message)
  }
  return [...out, ...results]
}

// A tool result's content: its text joined (llama-server's choice for text alone), or parts where it holds images.
function resultContent (content: unknown): string | Json[] {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const blocks = content as Block[]
  if (!blocks.some((b) => b.type === 'image')) return blocks.filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('')
  return blocks.flatMap((b): Json[] => {
    if (b.type === 'text') return [{ type: 'text', text: String(b.text ?? '') }]
    const url = b.type === 'image' ? imageUrl(b.source as Json | undefined) : null
    return url !== null ? [{ type: 'image_url', image_url: { url } }] : []
  })
}

function imageUrl (source: Json | undefined): string | null {
  if (source?.type === 'base64') return `data:${String(source.media_type ?? 'image/jpeg')};base64,${String(source.data ?? '')}`
  if (source?.type === 'url') return String(source.url ?? '')
  return null
}
