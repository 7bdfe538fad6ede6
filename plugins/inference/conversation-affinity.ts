// Enough to tell conversations apart (a system prompt and a first question), little enough to read in microseconds.
const AFFINITY_CHARS = 2048

/**
 * The start of a request's conversation as text: its system prompt and first user message (chat: OpenAI's and
 * Anthropic's `messages`, Anthropic's `system`), or the start of its prompt (completions, /api/generate). Every turn
 * of one conversation starts alike, so it routes them to the upstream whose prompt cache holds it. Text parts only:
 * an image's bytes would cost much and say little.
 */
export function conversationAffinity (body: Record<string, unknown>): string {
  const parts: string[] = []
  let left = AFFINITY_CHARS
  const add = (text: string): void => {
    if (left <= 0) return
    const cut = text.slice(0, left)
    parts.push(cut)
    left -= cut.length
  }
  addText(body.system, add)
  if (Array.isArray(body.messages)) {
    for (const message of body.messages as unknown[]) {
      if (typeof message !== 'object' || message === null) continue
      const { role, content } = message as { role?: unknown, content?: unknown }
      add(`${String(role)}:`)
      addText(content, add)
      if (role === 'user' || left <= 0) break
    }
  }
  addText(body.prompt, add)
  return parts.join('\n')
}

/** A string, or the text of content parts (`{type: 'text', text}`), as each shape has it. */
function addText (value: unknown, add: (text: string) => void): void {
  if (typeof value === 'string') { add(value); return }
  if (!Array.isArray(value)) return
  for (const part of value as unknown[]) {
    if (typeof part === 'string') add(part)
    else if (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string') add((part as { text: string }).text)
  }
}
