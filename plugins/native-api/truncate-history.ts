import type { ContextExceededError } from '../../core/base/errors.js'

interface Message { role?: string, content?: unknown }

/**
 * Ollama's `truncate` for a conversation longer than the model can hold: drops its oldest turns (a message and the
 * tool results that answer it), never a system message or the last message, until about as much text is gone as the
 * prompt was over by (with room for a reply). Returns false when nothing more can go.
 */
export function truncateHistory (messages: Message[], err: Pick<ContextExceededError, 'promptTokens' | 'contextLength'>): boolean {
  const room = Math.min(1024, Math.floor(err.contextLength / 8))
  const share = Math.min(1, (err.promptTokens - (err.contextLength - room)) / err.promptTokens)
  const size = (m: Message): number => typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content ?? '').length
  const goal = share * messages.reduce((sum, m) => sum + size(m), 0)
  let dropped = 0
  let any = false
  while (dropped < goal) {
    const first = messages.findIndex((m, i) => m.role !== 'system' && i < messages.length - 1)
    if (first === -1) break
    let end = first + 1
    while (end < messages.length - 1 && messages[end]!.role === 'tool') end++
    for (const m of messages.splice(first, end - first)) dropped += size(m)
    any = true
  }
  return any
}
