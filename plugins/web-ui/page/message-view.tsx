import { useState } from 'preact/hooks'
import { Thumbnails } from './attachments.js'
import type { Message, ToolCall } from './conversations.js'
import { formatSeconds } from './format.js'
import { copyText, Markdown } from './markdown-view.js'

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

/** Arguments as the model wrote them: pretty JSON, or its text when they did not parse. Shown as text, never HTML. */
function argumentsText (args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args, null, 2)
}

function ToolCalls ({ calls }: { calls: ToolCall[] }) {
  return (
    <ul class="tool-calls" aria-label="Tool calls">
      {calls.map((call, i) => (
        <li key={i} class="tool-call">
          <p>Calls <code class="tool-name">{call.name}</code></p>
          <pre class="tool-arguments"><code>{argumentsText(call.arguments)}</code></pre>
        </li>
      ))}
    </ul>
  )
}

interface ToolResultsProps {
  calls: ToolCall[]
  busy: boolean
  onSend: (results: Array<{ name: string, content: string }>) => void
}

/**
 * The page runs no tool: under the model's last calls the person types each result (what their tool returned),
 * and the model goes on with them.
 */
export function ToolResults ({ calls, busy, onSend }: ToolResultsProps) {
  const [results, setResults] = useState<string[]>(() => calls.map(() => ''))
  const ready = results.every((r) => r.trim() !== '')
  return (
    <form class="tool-results" onSubmit={(e) => {
      e.preventDefault()
      if (ready) onSend(calls.map((c, i) => ({ name: c.name, content: results[i]!.trim() })))
    }}>
      {calls.map((call, i) => (
        <div key={i} class="tool-result-field">
          <label for={`tool-result-${i}`}>Result of {call.name}{calls.length > 1 ? ` (call ${i + 1})` : ''}</label>
          <textarea id={`tool-result-${i}`} rows={2} value={results[i]}
            onInput={(e) => { const value = e.currentTarget.value; setResults((r) => r.map((x, j) => j === i ? value : x)) }} />
        </div>
      ))}
      <button type="submit" class="primary" disabled={busy || !ready}>{calls.length > 1 ? 'Send results' : 'Send result'}</button>
    </form>
  )
}

export interface MessageViewProps {
  message: Message
  streaming: boolean
  canRegenerate: boolean
  busy: boolean
  onEdit: (text: string) => void
  onRegenerate: () => void
}

export function MessageView ({ message, streaming, canRegenerate, busy, onEdit, onRegenerate }: MessageViewProps) {
  const [editing, setEditing] = useState<string | null>(null)
  const [copied, setCopied] = useState(false)
  const mine = message.role === 'user'
  if (message.role === 'tool') {
    return (
      <article class="message tool" aria-label={`Result of ${message.toolName ?? 'a tool'}`}>
        <p class="tool-label">Result of <code class="tool-name">{message.toolName}</code></p>
        <pre class="tool-output"><code>{message.content}</code></pre>
      </article>
    )
  }
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
        ? <>
            {message.images?.length ? <Thumbnails images={message.images} label="Images sent" /> : null}
            <p class="user-text">{message.content}</p>
          </>
        : <>
            {message.thinking
              ? <details class="thinking">
                  <summary>{streaming && !message.content ? 'Thinking…' : 'Thinking'}</summary>
                  <Markdown text={message.thinking} />
                </details>
              : null}
            <Markdown text={message.content} />
            {message.toolCalls?.length ? <ToolCalls calls={message.toolCalls} /> : null}
            {streaming && !message.content && !message.thinking ? <p class="waiting">Waiting for the model…</p> : null}
            {message.error ? <p class="error" role="alert">{message.error}</p> : null}
            <Stats message={message} />
          </>}
      {streaming
        ? null
        : <div class="actions">
            {mine ? <button type="button" disabled={busy} onClick={() => setEditing(message.content)}>Edit</button> : null}
            {!mine && message.content
              ? <button type="button" onClick={() => { void copyText(message.content).then(setCopied) }}>{copied ? 'Copied' : 'Copy'}</button>
              : null}
            {canRegenerate ? <button type="button" disabled={busy} onClick={onRegenerate}>Regenerate</button> : null}
          </div>}
    </article>
  )
}
