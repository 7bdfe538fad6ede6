import { contentWithoutAttribution } from '../inference/attribution-header.js'
import { openingLength, systemNote } from '../inference/chat-system-messages.js'
import type { SystemPlacement } from '../inference/system-placement.js'

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
 * A Messages request's settings as llama-server's Anthropic path reads them:
 * - `thinking: {type: "disabled"}` turns the model's reasoning off (`enable_thinking` for its template);
 *   `enabled` with `budget_tokens` is llama-server's own; `adaptive` leaves the model's default;
 * - `output_config.effort` goes to the template as `reasoning_effort`, for templates that take one.
 * `context_management` (edits of earlier turns' thinking) has nothing to act on here: earlier thinking reaches
 * the template only as llama-server passes it, so it is left as sent. (System messages: `placeSystem`.)
 */
export function shapeMessages<T extends MessagesFields> (body: T): T & Pick<MessagesFields, 'chat_template_kwargs'> {
  const template: Record<string, unknown> = {}
  if (body.thinking?.type === 'disabled') template.enable_thinking = false
  else if (body.output_config?.effort !== undefined) template.reasoning_effort = body.output_config.effort
  if (Object.keys(template).length === 0) return body
  // The client's own chat_template_kwargs win: they are llama-server's, and said on purpose.
  return { ...body, chat_template_kwargs: { ...template, ...body.chat_template_kwargs } }
}

/**
 * A Messages request's system prompt and system messages (Claude Code sends some among the others) as the model's
 * template takes them, so that each turn's prompt starts with the previous turn's (chat-system-messages.ts has the
 * rule): Claude Code's attribution line leaves `system`; `in-place`, the system messages stay where they were sent
 * (llama-server passes them to the template as they are); `as-user`, those before the first assistant message join
 * the system prompt, in order, after `system` itself, and each later one becomes a user message in its place.
 * Returns `body` itself when nothing changes.
 */
export function placeSystem<T extends MessagesFields> (body: T, placement: SystemPlacement): T {
  // Claude Code's attribution line goes (attribution-header.ts); no system prompt rather than an empty one, which
  // would stand in for the template's default.
  const system = body.system === undefined ? undefined : contentWithoutAttribution(body.system) ?? undefined
  const late = placement === 'as-user' && body.messages.some((m) => m.role === 'system')
  if (system === body.system && !late) return body
  const shaped: T = { ...body }
  if (system === undefined) delete shaped.system
  else shaped.system = system
  if (!late) return shaped
  const opening = openingLength(body.messages)
  const folded = body.messages.filter((m, i) => m.role === 'system' && i < opening).flatMap((m) => blocks(m.content))
  if (folded.length > 0) shaped.system = [...blocks(system), ...folded]
  shaped.messages = body.messages.flatMap((m, i) => {
    if (m.role !== 'system') return [m]
    return i < opening ? [] : [{ role: 'user', content: [{ type: 'text', text: systemNote(blocks(m.content).map((b) => b.text).join('\n')) }] }]
  })
  return shaped
}

function blocks (content: Content | undefined): Block[] {
  if (content === undefined) return []
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content.filter((b) => b.type === 'text')
}
