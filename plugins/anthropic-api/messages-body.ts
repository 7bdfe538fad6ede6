type Block = { type: string, text?: string } & Record<string, unknown>
type Content = string | Block[]
interface Message { role: string, content: Content }

/** The Messages fields the gateway shapes before llama-server reads the request. */
export interface MessagesFields {
  system?: Content
  messages: Message[]
  thinking?: { type?: string, budget_tokens?: number }
  output_config?: { effort?: string }
  chat_template_kwargs?: Record<string, unknown>
}

/**
 * A Messages request as llama-server's Anthropic path reads it (it converts to a chat and renders the model's
 * template, where a system message after the first is usually refused):
 * - `system` messages among the others are folded into the system prompt, in order, after `system` itself;
 * - `thinking: {type: "disabled"}` turns the model's reasoning off (`enable_thinking` for its template);
 *   `enabled` with `budget_tokens` is llama-server's own; `adaptive` leaves the model's default;
 * - `output_config.effort` goes to the template as `reasoning_effort`, for templates that take one.
 * `context_management` (edits of earlier turns' thinking) has nothing to act on here: earlier thinking reaches
 * the template only as llama-server passes it, so it is left as sent.
 */
export function shapeMessages<T extends MessagesFields> (body: T): T & Pick<MessagesFields, 'chat_template_kwargs'> {
  const systems = body.messages.filter((m) => m.role === 'system')
  const template: Record<string, unknown> = {}
  if (body.thinking?.type === 'disabled') template.enable_thinking = false
  else if (body.output_config?.effort !== undefined) template.reasoning_effort = body.output_config.effort
  if (systems.length === 0 && Object.keys(template).length === 0) return body
  const shaped: T & Pick<MessagesFields, 'chat_template_kwargs'> = { ...body }
  // The client's own chat_template_kwargs win: they are llama-server's, and said on purpose.
  if (Object.keys(template).length > 0) shaped.chat_template_kwargs = { ...template, ...body.chat_template_kwargs }
  if (systems.length > 0) {
    shaped.system = [...blocks(body.system), ...systems.flatMap((m) => blocks(m.content))]
    shaped.messages = body.messages.filter((m) => m.role !== 'system')
  }
  return shaped
}

function blocks (content: Content | undefined): Block[] {
  if (content === undefined) return []
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content.filter((b) => b.type === 'text')
}
