import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, getJson, onKeyNeeded, sendJson, setApiKey, stream, type ChatEvent, type ChatMessage, type LoadedModel, type ModelRecord, type PullEvent } from './api.js'
import { base64Of } from './attachments.js'
import { BatchesView } from './batches.js'
import { ChatView } from './chat.js'
import { DecideView } from './decide.js'
import {
  exportConversations, loadConversations, loadCurrentId, newConversation, saveConversations, saveCurrentId, titleOf,
  type ChatOptions, type Conversation, type Message, type ToolCall,
} from './conversations.js'
import { formatBytes } from './format.js'
import { KeyDialog } from './key-dialog.js'
import { ModelsView, type PullState } from './models.js'
import { parseTools } from './tools.js'
import { UsageView } from './usage.js'

type Theme = 'light' | 'dark'
const THEME_STORAGE = 'llamagate.theme'

function systemTheme (): Theme {
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

/** The theme chosen with the toggle, else the system's; set as data-theme on <html> (no inline style needed). */
export function applyStoredTheme (): Theme {
  const stored = localStorage.getItem(THEME_STORAGE)
  const theme: Theme = stored === 'light' || stored === 'dark' ? stored : systemTheme()
  document.documentElement.dataset.theme = theme
  return theme
}

/** Ollama's option names: the page's "max tokens" is num_predict. */
function requestOptions (options: ChatOptions): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [key, value] of Object.entries(options)) {
    if (typeof value === 'number' && Number.isFinite(value)) out[key === 'max_tokens' ? 'num_predict' : key] = value
  }
  return out
}

/** A kept message as /api/chat takes it: images without their data: prefix, calls and results in Ollama's fields. */
function requestMessage (m: Message): ChatMessage {
  return {
    role: m.role,
    content: m.content,
    ...(m.images?.length ? { images: m.images.map(base64Of) } : {}),
    ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments } })) } : {}),
    ...(m.toolName !== undefined ? { tool_name: m.toolName } : {}),
  }
}

function toolCallsOf (event: ChatEvent): ToolCall[] {
  return (event.message?.tool_calls ?? []).map((c) => ({ name: c.function?.name ?? '', arguments: c.function?.arguments ?? {} }))
}

function errorText (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

export function App () {
  const [models, setModels] = useState<ModelRecord[]>([])
  // Until the first list arrives, no model is not yet "no model": the page says it is loading instead.
  const [modelsListed, setModelsListed] = useState(false)
  const [capabilities, setCapabilities] = useState<ReadonlyMap<string, string[]>>(new Map())
  const [loaded, setLoaded] = useState<LoadedModel[]>([])
  const [problem, setProblem] = useState<string | null>(null)
  const [conversations, setConversations] = useState<Conversation[]>(loadConversations)
  const [currentId, setCurrentId] = useState<string | null>(loadCurrentId)
  const [view, setView] = useState<'chat' | 'models' | 'decide' | 'usage' | 'batches'>('chat')
  const [menuOpen, setMenuOpen] = useState(false)
  const [theme, setTheme] = useState<Theme>(() => document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light')
  const [keyPrompt, setKeyPrompt] = useState<string | null>(null)
  const keyWaiters = useRef<Array<(given: boolean) => void>>([])
  const [running, setRunning] = useState<{ id: string, controller: AbortController } | null>(null)
  const [pulls, setPulls] = useState<PullState[]>([])
  const pullIds = useRef(0)

  // A 401 anywhere opens one dialog; every request waiting on it retries once a key is given.
  useEffect(() => {
    onKeyNeeded((message) => new Promise<boolean>((resolve) => {
      keyWaiters.current.push(resolve)
      setKeyPrompt(message)
    }))
  }, [])
  const keyGiven = (key: string | null): void => {
    if (key !== null) setApiKey(key)
    setKeyPrompt(null)
    for (const resolve of keyWaiters.current.splice(0)) resolve(key !== null)
  }

  const refreshModels = useCallback(async () => {
    try {
      const { models: list } = await getJson<{ models: ModelRecord[] }>('/api/tags')
      setModels(list)
      setModelsListed(true)
      setProblem(null)
      const entries = await Promise.all(list.map(async (m) => {
        try {
          const show = await sendJson<{ capabilities?: string[] }>('POST', '/api/show', { model: m.name })
          return [m.name, show.capabilities ?? []] as const
        } catch {
          return [m.name, [] as string[]] as const
        }
      }))
      // A Map: a model named `constructor` must find its own capabilities, not Object's.
      setCapabilities(new Map(entries))
    } catch (err) {
      setProblem(`Could not list the models: ${errorText(err)}`)
    }
  }, [])
  const refreshLoaded = useCallback(async () => {
    try {
      setLoaded((await getJson<{ models: LoadedModel[] }>('/api/ps')).models)
    } catch (err) {
      setProblem(`Could not list the loaded models: ${errorText(err)}`)
    }
  }, [])

  useEffect(() => { void refreshModels() }, [refreshModels])
  // Loaded models come and go on their own (keep-alive): follow them while they are on screen.
  useEffect(() => {
    if (view !== 'models') return
    void refreshLoaded()
    const timer = setInterval(() => { void refreshLoaded() }, 5000)
    return () => clearInterval(timer)
  }, [view, refreshLoaded])

  // Saved a moment after the last change, so that a streaming answer is not written out on every fragment.
  useEffect(() => {
    const timer = setTimeout(() => {
      if (!saveConversations(conversations)) setProblem('This browser\'s storage is full: the latest changes to the conversations are not kept. Export them, or delete some (images take the most room).')
    }, running ? 1000 : 0)
    return () => clearTimeout(timer)
  }, [conversations, running])

  const current = conversations.find((c) => c.id === currentId) ?? null
  const firstModel = models[0]?.name ?? ''

  // Always a conversation to type into.
  useEffect(() => {
    if (current) return
    const fresh = conversations[0] ?? newConversation(firstModel)
    if (!conversations[0]) setConversations([fresh])
    setCurrentId(fresh.id)
  }, [current, conversations, firstModel])
  useEffect(() => { if (currentId) saveCurrentId(currentId) }, [currentId])
  // A conversation whose model is gone (or that began before any model was there) takes the first one.
  useEffect(() => {
    if (current && firstModel && !models.some((m) => m.name === current.model)) update(current.id, { model: firstModel })
  }, [current?.id, current?.model, models, firstModel])

  function update (id: string, change: Partial<Conversation> | ((c: Conversation) => Partial<Conversation>)): void {
    setConversations((list) => list.map((c) => c.id === id ? { ...c, ...(typeof change === 'function' ? change(c) : change) } : c))
  }

  function setLastMessage (id: string, change: Partial<Message>): void {
    update(id, (c) => ({ messages: c.messages.map((m, i) => i === c.messages.length - 1 ? { ...m, ...change } : m) }))
  }

  /** Streams an answer to `history` (which ends with the person's message or tool results) into conversation `c`. */
  async function answer (c: Conversation, history: Message[]): Promise<void> {
    const controller = new AbortController()
    setRunning({ id: c.id, controller })
    update(c.id, { messages: [...history, { role: 'assistant', content: '', model: c.model }], updatedAt: Date.now() })
    const started = performance.now()
    let firstTokenMs: number | undefined
    let content = ''
    let thinking = ''
    let toolCalls: ToolCall[] = []
    const tools = parseTools(c.tools ?? '')
    const body = {
      model: c.model,
      messages: [
        ...(c.system.trim() ? [{ role: 'system', content: c.system }] : []),
        ...history.map(requestMessage),
      ],
      stream: true,
      options: requestOptions(c.options),
      ...('tools' in tools && tools.tools.length > 0 ? { tools: tools.tools } : {}),
      ...((capabilities.get(c.model) ?? []).includes('thinking') ? { think: c.think !== false } : {}),
    }
    try {
      await stream<ChatEvent>('/api/chat', body, (event) => {
        const piece = event.message?.content ?? ''
        const thought = event.message?.thinking ?? ''
        const calls = toolCallsOf(event)
        if (piece || thought || calls.length > 0) {
          firstTokenMs ??= performance.now() - started
          content += piece
          thinking += thought
          toolCalls = [...toolCalls, ...calls]
          setLastMessage(c.id, { content, ...(thinking ? { thinking } : {}), ...(toolCalls.length > 0 ? { toolCalls } : {}) })
        }
        if (event.done) {
          const tokensPerSecond = event.eval_count && event.eval_duration ? event.eval_count / (event.eval_duration / 1e9) : undefined
          setLastMessage(c.id, {
            stats: {
              ...(tokensPerSecond !== undefined ? { tokensPerSecond } : {}),
              ...(firstTokenMs !== undefined ? { firstTokenMs } : {}),
              ...(event.eval_count !== undefined ? { tokens: event.eval_count } : {}),
              ...(event.prompt_eval_count !== undefined ? { promptTokens: event.prompt_eval_count } : {}),
              ...(event.done_reason ? { doneReason: event.done_reason } : {}),
            },
          })
        }
      }, controller.signal)
    } catch (err) {
      if (controller.signal.aborted) {
        setLastMessage(c.id, { stats: { ...(firstTokenMs !== undefined ? { firstTokenMs } : {}), doneReason: 'stopped' } })
      } else {
        setLastMessage(c.id, { error: err instanceof ApiError ? err.message : `The answer failed: ${errorText(err)}` })
      }
    } finally {
      setRunning(null)
      update(c.id, { updatedAt: Date.now() })
    }
  }

  const send = (text: string, images: string[]): void => {
    if (!current || running) return
    const history: Message[] = [...current.messages, { role: 'user', content: text, ...(images.length > 0 ? { images } : {}) }]
    const title = current.messages.length === 0 ? titleOf(text) : current.title
    update(current.id, { title })
    void answer({ ...current, title }, history)
  }
  const sendToolResults = (results: Array<{ name: string, content: string }>): void => {
    if (!current || running) return
    void answer(current, [...current.messages, ...results.map((r): Message => ({ role: 'tool', toolName: r.name, content: r.content }))])
  }
  // The last answer again, to what came before it: the person's question or the tool results.
  const regenerate = (): void => {
    if (!current) return
    const lastAsked = current.messages.findLastIndex((m) => m.role !== 'assistant')
    if (lastAsked !== -1) void answer(current, current.messages.slice(0, lastAsked + 1))
  }
  // An edited question keeps its images.
  const edit = (index: number, text: string): void => {
    if (!current || text.trim() === '') return
    const images = current.messages[index]?.images
    void answer(current, [...current.messages.slice(0, index), { role: 'user', content: text.trim(), ...(images?.length ? { images } : {}) }])
  }

  const startChat = (model = current?.model || firstModel): void => {
    const fresh = newConversation(model)
    setConversations((list) => [fresh, ...list])
    setCurrentId(fresh.id)
    setView('chat')
    setMenuOpen(false)
  }
  const removeConversation = (c: Conversation): void => {
    if (!confirm(`Delete the conversation "${c.title}"?`)) return
    if (running?.id === c.id) running.controller.abort()
    setConversations((list) => list.filter((x) => x.id !== c.id))
  }

  const pull = (model: string): void => {
    const id = ++pullIds.current
    const controller = new AbortController()
    const change = (fn: (p: PullState) => Partial<PullState>): void => setPulls((list) => list.map((p) => p.id === id ? { ...p, ...fn(p) } : p))
    setPulls((list) => [...list, { id, model, status: 'starting', files: [], done: false, controller }])
    stream<PullEvent>('/api/pull', { model }, (event) => {
      change((p) => {
        if (event.status === 'success') return { status: 'done', done: true, files: p.files.map((f) => ({ ...f, completed: f.total })) }
        if (event.digest === undefined || event.total === undefined) return { status: event.status }
        const file = { name: event.digest, total: event.total, completed: event.completed ?? 0 }
        const files = p.files.some((f) => f.name === file.name) ? p.files.map((f) => f.name === file.name ? file : f) : [...p.files, file]
        return { status: event.status, files }
      })
    }, controller.signal)
      .then(() => { void refreshModels() })
      .catch((err: unknown) => change(() => ({ error: controller.signal.aborted ? 'cancelled' : errorText(err) })))
  }

  const unload = async (model: string): Promise<void> => {
    try {
      await sendJson('POST', '/api/stop', { model })
    } catch (err) {
      setProblem(`Could not unload ${model}: ${errorText(err)}`)
    }
    await refreshLoaded()
  }
  const removeModel = async (model: string): Promise<void> => {
    if (!confirm(`Delete ${model}? Its files are removed from this server.`)) return
    try {
      await sendJson('DELETE', '/api/delete', { model })
    } catch (err) {
      setProblem(`Could not delete ${model}: ${errorText(err)}`)
    }
    await Promise.all([refreshModels(), refreshLoaded()])
  }

  const toggleTheme = (): void => {
    const next: Theme = theme === 'dark' ? 'light' : 'dark'
    localStorage.setItem(THEME_STORAGE, next)
    document.documentElement.dataset.theme = next
    setTheme(next)
  }

  const streaming = running !== null && running.id === current?.id
  const selected = models.find((m) => m.name === current?.model)
  const sorted = [...conversations].sort((a, b) => b.updatedAt - a.updatedAt)

  return (
    <div class={`layout${menuOpen ? ' menu-open' : ''}`}>
      <header class="topbar">
        <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="sidebar" onClick={() => setMenuOpen(!menuOpen)}>
          <span aria-hidden="true">☰</span><span class="visually-hidden">Conversations</span>
        </button>
        <h1>llamagate</h1>
        <nav class="views" aria-label="Views">
          <button type="button" aria-current={view === 'chat' ? 'page' : undefined} onClick={() => setView('chat')}>Chat</button>
          <button type="button" aria-current={view === 'models' ? 'page' : undefined} onClick={() => setView('models')}>Models</button>
          <button type="button" aria-current={view === 'decide' ? 'page' : undefined} onClick={() => setView('decide')}>Decide</button>
          <button type="button" aria-current={view === 'usage' ? 'page' : undefined} onClick={() => setView('usage')}>Usage</button>
          <button type="button" aria-current={view === 'batches' ? 'page' : undefined} onClick={() => setView('batches')}>Batches</button>
        </nav>
        <div class="model-picker">
          <label for="model">Model</label>
          <select id="model" value={current?.model ?? ''} disabled={models.length === 0 || streaming}
            onChange={(e) => { if (current) update(current.id, { model: e.currentTarget.value }) }}>
            {models.length === 0 ? <option value="">{modelsListed ? 'no models' : 'loading…'}</option> : null}
            {models.map((m) => <option key={m.name} value={m.name}>{m.name} ({formatBytes(m.size)})</option>)}
          </select>
          {selected
            ? <span class="capabilities"><span class="visually-hidden">Capabilities: </span>{(capabilities.get(selected.name) ?? []).join(' · ')}</span>
            : null}
        </div>
        <button type="button" class="theme-toggle" aria-pressed={theme === 'dark'} onClick={toggleTheme}>Dark theme</button>
      </header>

      <aside id="sidebar" class="sidebar">
        <nav aria-label="Conversations">
          <button type="button" class="primary new-chat" onClick={() => startChat()}>New chat</button>
          <ul class="conversation-list">
            {sorted.map((c) => (
              <li key={c.id} class={c.id === currentId ? 'current' : ''}>
                <button type="button" class="conversation" aria-current={c.id === currentId ? 'true' : undefined}
                  onClick={() => { setCurrentId(c.id); setView('chat'); setMenuOpen(false) }}>
                  {c.title}
                </button>
                <button type="button" class="remove" aria-label={`Delete conversation ${c.title}`} onClick={() => removeConversation(c)}>×</button>
              </li>
            ))}
          </ul>
          <button type="button" class="export" onClick={() => exportConversations(conversations)}>Export as JSON</button>
        </nav>
      </aside>

      <main class="content">
        {problem
          ? <p class="problem" role="alert">{problem} <button type="button" onClick={() => setProblem(null)}>Dismiss</button></p>
          : null}
        {view === 'models'
          ? <ModelsView models={models} listed={modelsListed} capabilities={capabilities} loaded={loaded} pulls={pulls}
              onPull={pull}
              onCancelPull={(id) => pulls.find((p) => p.id === id)?.controller.abort()}
              onDismissPull={(id) => setPulls((list) => list.filter((p) => p.id !== id))}
              onUnload={(m) => { void unload(m) }}
              onDelete={(m) => { void removeModel(m) }}
              onChat={(m) => startChat(m)}
              onRefresh={() => { void refreshModels(); void refreshLoaded() }} />
          : view === 'usage' ? <UsageView />
          : view === 'batches' ? <BatchesView />
          : view === 'decide' ? <DecideView records={models} />
          : current
            ? <ChatView conversation={current} capabilities={capabilities.get(current.model) ?? []} streaming={streaming}
                elsewhere={running !== null && !streaming} hasModel={models.length > 0} modelsListed={modelsListed}
                onSend={send} onToolResults={sendToolResults} onStop={() => running?.controller.abort()} onRegenerate={regenerate} onEdit={edit}
                onChange={(change) => update(current.id, change)} />
            : null}
      </main>
      {keyPrompt !== null ? <KeyDialog message={keyPrompt} onDone={keyGiven} /> : null}
    </div>
  )
}
