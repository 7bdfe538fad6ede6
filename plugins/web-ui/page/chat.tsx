import { useEffect, useRef, useState } from 'preact/hooks'
import { Attachments, imageFiles, readImage } from './attachments.js'
import type { Conversation } from './conversations.js'
import { MessageView, ToolResults } from './message-view.js'
import { Settings } from './settings.js'
import { parseTools } from './tools.js'

export interface ChatViewProps {
  conversation: Conversation
  /** What the conversation's model can do, from /api/show: "vision" offers images, "thinking" the think toggle. */
  capabilities: string[]
  streaming: boolean
  /** An answer is being written in another conversation: one at a time, so that Stop always reaches it. */
  elsewhere: boolean
  hasModel: boolean
  /** The first list of models has arrived: before it, no model yet only means not known yet. */
  modelsListed: boolean
  onSend: (text: string, images: string[]) => void
  onToolResults: (results: Array<{ name: string, content: string }>) => void
  onStop: () => void
  onRegenerate: () => void
  onEdit: (index: number, text: string) => void
  onChange: (c: Partial<Conversation>) => void
}

export function ChatView ({ conversation, capabilities, streaming, elsewhere, hasModel, modelsListed, onSend, onToolResults, onStop, onRegenerate, onEdit, onChange }: ChatViewProps) {
  const [draft, setDraft] = useState('')
  const [images, setImages] = useState<string[]>([])
  const [imageProblem, setImageProblem] = useState<string | null>(null)
  const log = useRef<HTMLElement>(null)
  const input = useRef<HTMLTextAreaElement>(null)
  const messages = conversation.messages
  const last = messages.at(-1)
  const sees = capabilities.includes('vision')
  const thinks = capabilities.includes('thinking')
  const tools = parseTools(conversation.tools ?? '')
  const toolsProblem = 'error' in tools ? tools.error : null
  const pendingCalls = !streaming && last?.role === 'assistant' && !last.error && last.toolCalls?.length ? last.toolCalls : null

  // Follow the answer as it grows, unless the reader scrolled up to read something else.
  useEffect(() => {
    const el = log.current
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 120) el.scrollTop = el.scrollHeight
  }, [last?.content, last?.thinking, last?.toolCalls, messages.length])
  useEffect(() => { input.current?.focus() }, [conversation.id])
  // Images wait for a model that can see them: another conversation or model starts without them.
  useEffect(() => { setImages([]); setImageProblem(null) }, [conversation.id])

  const addImages = (files: File[]): void => {
    Promise.all(files.map(readImage))
      .then((read) => { setImages((list) => [...list, ...read]); setImageProblem(null) })
      .catch((err: unknown) => setImageProblem(`Could not read the image: ${err instanceof Error ? err.message : String(err)}`))
  }
  const send = (): void => {
    const text = draft.trim()
    if (text === '' || streaming || elsewhere || !hasModel || toolsProblem !== null) return
    onSend(text, sees ? images : [])
    setDraft('')
    setImages([])
  }
  const blocked = !hasModel || elsewhere || toolsProblem !== null
  return (
    <div class="chat">
      <Settings conversation={conversation} toolsProblem={toolsProblem} onChange={onChange} />
      <section class="messages" ref={log} role="log" aria-label="Conversation" aria-busy={streaming} tabIndex={0}>
        {messages.length === 0
          ? <p class="empty" role={modelsListed ? undefined : 'status'}>{hasModel ? 'Ask something to start.' : modelsListed ? 'No model yet: pull one under Models.' : 'Loading the models…'}</p>
          : messages.map((m, i) => (
            <MessageView key={`${conversation.id}-${i}`} message={m} busy={streaming}
              streaming={streaming && i === messages.length - 1 && m.role === 'assistant'}
              canRegenerate={!streaming && i === messages.length - 1 && m.role === 'assistant'}
              onEdit={(text) => onEdit(i, text)} onRegenerate={onRegenerate} />
          ))}
        {pendingCalls
          ? <ToolResults key={`${conversation.id}-${messages.length}`} calls={pendingCalls} busy={blocked} onSend={onToolResults} />
          : null}
      </section>
      <form class="composer" onSubmit={(e) => { e.preventDefault(); send() }}>
        {sees || thinks
          ? <div class="composer-tools">
              {sees ? <Attachments images={images} disabled={streaming} onAdd={addImages} onRemove={(i) => setImages((list) => list.filter((_, j) => j !== i))} /> : null}
              {thinks
                ? <button type="button" class="think-toggle" aria-pressed={conversation.think !== false}
                    title="Whether the model thinks before it answers"
                    onClick={() => onChange({ think: conversation.think === false })}>Think</button>
                : null}
              {imageProblem !== null ? <p class="error" role="alert">{imageProblem}</p> : null}
            </div>
          : null}
        <div class="composer-row">
          <label class="visually-hidden" for="prompt">Message</label>
          <textarea id="prompt" ref={input} rows={2} value={draft} placeholder="Message (Enter sends, Shift+Enter for a new line)"
            onInput={(e) => setDraft(e.currentTarget.value)}
            onPaste={(e) => { const files = imageFiles(e.clipboardData?.files); if (sees && files.length > 0) { e.preventDefault(); addImages(files) } }}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send() }
              if (e.key === 'Escape' && streaming) onStop()
            }} />
          {streaming
            ? <button type="button" class="stop" onClick={onStop}>Stop</button>
            : <button type="submit" class="primary" disabled={blocked || draft.trim() === ''}
                title={elsewhere ? 'An answer is being written in another conversation' : toolsProblem ?? undefined}>Send</button>}
        </div>
      </form>
    </div>
  )
}
