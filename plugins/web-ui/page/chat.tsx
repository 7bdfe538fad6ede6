import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import type { ChatOptions, Conversation, Message } from './conversations.js'
import { formatSeconds } from './format.js'
import { renderMarkdown } from './markdown.js'

/** Sanitized Markdown; code blocks get a copy button (handled here, by delegation). */
export function Markdown ({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text)
    // Every <pre> in the sanitized output is one the code renderer wrote: raw HTML from the model is escaped.
    .replaceAll('<pre>', '<pre><button type="button" class="copy" aria-label="Copy code">Copy</button>'), [text])
  const onClick = (event: MouseEvent): void => {
    const button = (event.target as Element).closest('button.copy')
    const code = button?.parentElement?.querySelector('code')
    if (button && code) void copyText(code.textContent ?? '').then((ok) => { button.textContent = ok ? 'Copied' : 'Copy failed' })
  }
  return <div class="markdown" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />
}

/** The clipboard API where the page is a secure context (loopback is), a selection copy elsewhere. */
export async function copyText (text: string): Promise<boolean> {
  try {
    if (navigator.clipboard) { await navigator.clipboard.writeText(text); return true }
  } catch {}
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.className = 'offscreen'
  document.body.append(area)
  area.select()
  const ok = document.execCommand('copy')
  area.remove()
  return ok
}

function Stats ({ message }: { message: Message }) {
  const s = message.stats
  if (!s) return null
  const parts: string[] = []
  if (s.tokensPerSecond !== undefined) parts.push(`${s.tokensPerSecond.toFixed(1)} tokens/s`)
  if (s.firstTokenMs !== undefined) parts.push(`first token ${formatSeconds(s.firstTokenMs)}`)
  if (s.tokens !== undefined) parts.push(`${s.tokens} tokens`)
  if (s.doneReason === 'stopped') parts.push('stopped')
  else if (s.doneReason === 'length') parts.push('cut at the token limit')
  return <p class="stats">{parts.join(' · ')}</p>
}

interface MessageViewProps {
  message: Message
  streaming: boolean
  canRegenerate: boolean
  busy: boolean
  onEdit: (text: string) => void
  onRegenerate: () => void
}

function MessageView ({ message, streaming, canRegenerate, busy, onEdit, onRegenerate }: MessageViewProps) {
  const [editing, setEditing] = useState<string | null>(null)
  const [copied, setCopied] = useState(false)
  const mine = message.role === 'user'
  if (editing !== null) {
    return (
      <article class="message user editing" aria-label="Your message, editing">
        <form onSubmit={(e) => { e.preventDefault(); onEdit(editing); setEditing(null) }}>
          <label class="visually-hidden" for="edit-message">Edit your message</label>
          <textarea id="edit-message" value={editing} rows={Math.min(12, editing.split('\n').length + 1)}
            onInput={(e) => setEditing(e.currentTarget.value)}
            onKeyDown={(e) => { if (e.key === 'Escape') setEditing(null) }} autofocus />
          <div class="actions">
            <button type="submit" disabled={busy || editing.trim() === ''}>Save and send</button>
            <button type="button" onClick={() => setEditing(null)}>Cancel</button>
          </div>
        </form>
      </article>
    )
  }
  return (
    <article class={`message ${message.role}`} aria-label={mine ? 'You' : `Answer${message.model ? ` from ${message.model}` : ''}`}>
      {mine
        ? <p class="user-text">{message.content}</p>
        : <>
            {message.thinking
              ? <details class="thinking">
                  <summary>{streaming && !message.content ? 'Thinking…' : 'Thinking'}</summary>
                  <Markdown text={message.thinking} />
                </details>
              : null}
            <Markdown text={message.content} />
            {streaming && !message.content && !message.thinking ? <p class="waiting">Waiting for the model…</p> : null}
            {message.error ? <p class="error" role="alert">{message.error}</p> : null}
            <Stats message={message} />
          </>}
      {streaming
        ? null
        : <div class="actions">
            {mine ? <button type="button" disabled={busy} onClick={() => setEditing(message.content)}>Edit</button> : null}
            {!mine
              ? <button type="button" onClick={() => { void copyText(message.content).then(setCopied) }}>{copied ? 'Copied' : 'Copy'}</button>
              : null}
            {canRegenerate ? <button type="button" disabled={busy} onClick={onRegenerate}>Regenerate</button> : null}
          </div>}
    </article>
  )
}

const OPTION_FIELDS: Array<{ key: keyof ChatOptions, label: string, step: string, min: string, max?: string }> = [
  { key: 'temperature', label: 'Temperature', step: '0.05', min: '0', max: '2' },
  { key: 'top_p', label: 'Top p', step: '0.05', min: '0', max: '1' },
  { key: 'num_ctx', label: 'Context (num_ctx)', step: '256', min: '256' },
  { key: 'max_tokens', label: 'Max tokens', step: '1', min: '1' },
  { key: 'seed', label: 'Seed', step: '1', min: '0' },
]

function Settings ({ conversation, onChange }: { conversation: Conversation, onChange: (c: Partial<Conversation>) => void }) {
  return (
    <details class="settings">
      <summary>System prompt and options</summary>
      <label for="system-prompt">System prompt</label>
      <textarea id="system-prompt" rows={3} value={conversation.system}
        onInput={(e) => onChange({ system: e.currentTarget.value })} />
      <div class="options">
        {OPTION_FIELDS.map((f) => (
          <div class="option" key={f.key}>
            <label for={`option-${f.key}`}>{f.label}</label>
            <input id={`option-${f.key}`} type="number" inputMode="decimal" step={f.step} min={f.min} max={f.max}
              placeholder="default" value={conversation.options[f.key] ?? ''}
              onInput={(e) => {
                const text = e.currentTarget.value
                const value = text === '' ? undefined : Number(text)
                const options = { ...conversation.options }
                if (value === undefined || Number.isNaN(value)) delete options[f.key]
                else options[f.key] = value
                onChange({ options })
              }} />
          </div>
        ))}
      </div>
    </details>
  )
}

export interface ChatViewProps {
  conversation: Conversation
  streaming: boolean
  /** An answer is being written in another conversation: one at a time, so that Stop always reaches it. */
  elsewhere: boolean
  hasModel: boolean
  onSend: (text: string) => void
  onStop: () => void
  onRegenerate: () => void
  onEdit: (index: number, text: string) => void
  onChange: (c: Partial<Conversation>) => void
}

export function ChatView ({ conversation, streaming, elsewhere, hasModel, onSend, onStop, onRegenerate, onEdit, onChange }: ChatViewProps) {
  const [draft, setDraft] = useState('')
  const log = useRef<HTMLElement>(null)
  const input = useRef<HTMLTextAreaElement>(null)
  const messages = conversation.messages
  const last = messages.at(-1)

  // Follow the answer as it grows, unless the reader scrolled up to read something else.
  useEffect(() => {
    const el = log.current
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 120) el.scrollTop = el.scrollHeight
  }, [last?.content, last?.thinking, messages.length])
  useEffect(() => { input.current?.focus() }, [conversation.id])

  const send = (): void => {
    const text = draft.trim()
    if (text === '' || streaming || elsewhere || !hasModel) return
    onSend(text)
    setDraft('')
  }
  return (
    <div class="chat">
      <Settings conversation={conversation} onChange={onChange} />
      <section class="messages" ref={log} role="log" aria-label="Conversation" aria-busy={streaming} tabIndex={0}>
        {messages.length === 0
          ? <p class="empty">{hasModel ? 'Ask something to start.' : 'No model yet: pull one under Models.'}</p>
          : messages.map((m, i) => (
            <MessageView key={`${conversation.id}-${i}`} message={m} busy={streaming}
              streaming={streaming && i === messages.length - 1 && m.role === 'assistant'}
              canRegenerate={!streaming && i === messages.length - 1 && m.role === 'assistant'}
              onEdit={(text) => onEdit(i, text)} onRegenerate={onRegenerate} />
          ))}
      </section>
      <form class="composer" onSubmit={(e) => { e.preventDefault(); send() }}>
        <label class="visually-hidden" for="prompt">Message</label>
        <textarea id="prompt" ref={input} rows={2} value={draft} placeholder="Message (Enter sends, Shift+Enter for a new line)"
          onInput={(e) => setDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send() }
            if (e.key === 'Escape' && streaming) onStop()
          }} />
        {streaming
          ? <button type="button" class="stop" onClick={onStop}>Stop</button>
          : <button type="submit" class="primary" disabled={!hasModel || elsewhere || draft.trim() === ''}
              title={elsewhere ? 'An answer is being written in another conversation' : undefined}>Send</button>}
      </form>
    </div>
  )
}
