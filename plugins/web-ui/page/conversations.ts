/** Conversations kept in this browser (localStorage): nothing about them is stored on the server. */

export interface AnswerStats {
  /** Tokens a second while generating, from the server's eval_count and eval_duration. */
  tokensPerSecond?: number
  /** Milliseconds from sending to the first streamed fragment, as this page saw it. */
  firstTokenMs?: number
  tokens?: number
  promptTokens?: number
  /** Why it ended: stop, length, or "stopped" when the person stopped it. */
  doneReason?: string
}

/** A call the model asked for, as /api/chat sends it (arguments parsed, or the text when they did not parse). */
export interface ToolCall { name: string, arguments: unknown }

export interface Message {
  /** "tool": a tool's result, typed in by the person in answer to the model's call. */
  role: 'user' | 'assistant' | 'tool'
  content: string
  /** Images sent with a question, as data: URLs (the page strips the prefix for the server). */
  images?: string[]
  thinking?: string
  toolCalls?: ToolCall[]
  /** The tool a "tool" message answers. */
  toolName?: string
  stats?: AnswerStats
  /** The error that ended this answer, if one did. */
  error?: string
  /** The model that wrote this answer. */
  model?: string
}

/** Sampling options as the page offers them; an empty field is not sent. */
export interface ChatOptions {
  temperature?: number
  top_p?: number
  num_ctx?: number
  max_tokens?: number
  seed?: number
}

export interface Conversation {
  id: string
  title: string
  model: string
  system: string
  options: ChatOptions
  /** Tool definitions as the person typed them (a JSON array, Ollama's and OpenAI's shape); empty for none. */
  tools?: string
  /** Thinking off (false) or on for a model that can think; unset is on, as Ollama's thinking models start. */
  think?: boolean
  messages: Message[]
  updatedAt: number
}

const STORAGE = 'llamagate.conversations'
const CURRENT = 'llamagate.currentConversation'

export function loadConversations (): Conversation[] {
  try {
    const list = JSON.parse(localStorage.getItem(STORAGE) ?? '[]') as unknown
    return Array.isArray(list) ? list.filter(isConversation) : []
  } catch {
    return []
  }
}

function isConversation (value: unknown): value is Conversation {
  const c = value as Conversation
  return typeof c === 'object' && c !== null && typeof c.id === 'string' && Array.isArray(c.messages)
}

/** Keeps the conversations; false when the browser's storage refused them (full: images take the most room). */
export function saveConversations (list: Conversation[]): boolean {
  try {
    localStorage.setItem(STORAGE, JSON.stringify(list))
    return true
  } catch (err) {
    // A full storage must not break the chat in progress; the next save tries again.
    console.warn('llamagate: could not save the conversations', err)
    return false
  }
}

export function loadCurrentId (): string | null { return localStorage.getItem(CURRENT) }
export function saveCurrentId (id: string): void { localStorage.setItem(CURRENT, id) }

export function newConversation (model: string): Conversation {
  return { id: crypto.randomUUID(), title: 'New chat', model, system: '', options: {}, messages: [], updatedAt: Date.now() }
}

/** The first words of the first question. */
export function titleOf (text: string): string {
  const line = text.trim().replace(/\s+/g, ' ')
  return line.length > 48 ? `${line.slice(0, 47)}…` : line || 'New chat'
}

/** Downloads the conversations as a JSON file. */
export function exportConversations (list: Conversation[]): void {
  const blob = new Blob([JSON.stringify({ exported_at: new Date().toISOString(), conversations: list }, null, 2)], { type: 'application/json' })
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = `llamagate-conversations-${new Date().toISOString().slice(0, 10)}.json`
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}
