import { contentWithoutAttribution } from './attribution-header.js'
import type { SystemPlacement } from './system-placement.js'

/** A chat message as OpenAI's chat completions (and llama-server's) have it: content a string or parts. */
interface ChatLike { role?: string, content?: unknown }
type Part = { type?: string, text?: string } & Record<string, unknown>

/**
 * A chat's system messages as the model's template takes them (system-placement.ts), so that each turn's prompt
 * starts with the previous turn's:
 * - Claude Code's attribution line goes from the system messages that open the conversation (attribution-header.ts);
 * - `in-place`: every other message stays as sent;
 * - `as-user`: the system messages before the first assistant message (the opening: every turn sends it alike)
 *   become one system message first, in order; a later one becomes a user message in its place, its text inside
 *   `<system-reminder>` tags (how Claude Code and Qwen Code mark the harness's words in user turns), so that the
 *   model still reads it as the system's.
 */
export function placeSystemMessages<M extends ChatLike> (messages: M[], placement: SystemPlacement): Array<M | { role: string, content: string }> {
  const cleaned = withoutHeaders(messages, openingLength(messages))
  const opening = openingLength(cleaned)
  if (placement === 'in-place') return cleaned
  const texts: string[] = []
  const rest: Array<M | { role: string, content: string }> = []
  cleaned.forEach((message, i) => {
    if (message.role !== 'system') rest.push(message)
    else if (i < opening) texts.push(textOf(message.content))
    else rest.push({ role: 'user', content: systemNote(textOf(message.content)) })
  })
  if (texts.length === 0) return rest
  // One system message that already opens the chat stays as sent (its parts too).
  if (texts.length === 1 && cleaned[0]?.role === 'system') return [cleaned[0], ...rest]
  return [{ role: 'system', content: texts.join('\n\n') }, ...rest]
}

/** Text for a user turn that carries a system message's words. */
export function systemNote (text: string): string {
  return text.startsWith('<system-reminder>') ? text : `<system-reminder>\n${text}\n</system-reminder>`
}

/** How many messages come before the first assistant message: the part of the conversation every turn repeats. */
export function openingLength (messages: ReadonlyArray<{ role?: string }>): number {
  const first = messages.findIndex((m) => m.role === 'assistant')
  return first === -1 ? messages.length : first
}

/** The opening's system messages without the attribution line; one left empty by it goes. */
function withoutHeaders<M extends ChatLike> (messages: M[], opening: number): M[] {
  let changed = false
  const out: M[] = []
  messages.forEach((message, i) => {
    if (i >= opening || message.role !== 'system') { out.push(message); return }
    const content = contentWithoutAttribution(message.content)
    if (content === message.content) { out.push(message); return }
    changed = true
    if (content !== null) out.push({ ...message, content } as M)
  })
  return changed ? out : messages
}

/** A message's text: a string, or its text parts joined as llama-server joins them (a newline between). */
function textOf (content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return (content as Part[]).filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('\n')
}
