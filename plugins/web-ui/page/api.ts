/** The native API as the page uses it: JSON calls and NDJSON streams, with the API key when one is set. */

const KEY_STORAGE = 'llamagate.apiKey'

/** A refusal from the server, with its status and its `{"error"}` sentence. */
export class ApiError extends Error {
  constructor (readonly status: number, message: string) { super(message) }
}

/** A model as /api/tags lists it. */
export interface ModelRecord {
  name: string
  size: number
  format: string
  modified_at: number | string
  digest: string
  details?: { family?: string, parameter_size?: string, quantization_level?: string }
  /** What it can do (`completion`, `decision`...), as /api/tags lists it. */
  capabilities?: string[]
  /** Set on a model of config.yaml's upstreams: the server it runs on, and its name there. */
  remote_host?: string
  remote_model?: string
}

/** A model as /api/ps lists it. */
export interface LoadedModel {
  name: string
  size: number
  expires_at: string
  state?: string
  purpose?: string
  context_length?: number
  active_requests?: number
  /** The llama-server backend of a local model (cpu, cuda, ...). */
  runtime?: string | null
  /** Absent from servers older than upstreams: every model ran here then. */
  where?: 'local' | 'upstream'
  upstream?: string
  remote_host?: string
}

/** A message as /api/chat takes it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string
  images?: string[]
  tool_calls?: Array<{ function: { name: string, arguments: unknown } }>
  tool_name?: string
}

/** One event of /api/chat's NDJSON stream. */
export interface ChatEvent {
  message?: { role?: string, content?: string, thinking?: string, tool_calls?: Array<{ function?: { name?: string, arguments?: unknown } }> }
  done?: boolean
  done_reason?: string
  eval_count?: number
  eval_duration?: number
  prompt_eval_count?: number
  prompt_eval_duration?: number
  load_duration?: number
  error?: string
}

/** One event of /api/pull's NDJSON stream. */
export interface PullEvent { status: string, digest?: string, total?: number, completed?: number, error?: string }

export function apiKey (): string | null {
  return localStorage.getItem(KEY_STORAGE)
}

export function setApiKey (key: string | null): void {
  if (key === null || key === '') localStorage.removeItem(KEY_STORAGE)
  else localStorage.setItem(KEY_STORAGE, key)
}

/**
 * Asked for a key when the server answers 401; resolves once the person gave one (true) or declined (false).
 * The app sets it to open its key dialog.
 */
let askForKey: (message: string) => Promise<boolean> = async () => false
export function onKeyNeeded (ask: (message: string) => Promise<boolean>): void { askForKey = ask }

/**
 * fetch with the key; a 401 asks for a key and tries again with it, as long as the person gives one. Other
 * refusals throw an ApiError with the server's sentence.
 */
export async function call (path: string, init: RequestInit = {}): Promise<Response> {
  for (;;) {
    const headers = new Headers(init.headers)
    const key = apiKey()
    if (key) headers.set('authorization', `Bearer ${key}`)
    const res = await fetch(path, { ...init, headers })
    if (res.ok) return res
    const message = await errorMessage(res)
    if (res.status === 401 && await askForKey(message)) continue
    throw new ApiError(res.status, message)
  }
}

async function errorMessage (res: Response): Promise<string> {
  const text = await res.text().catch(() => '')
  try {
    const body = JSON.parse(text) as { error?: unknown }
    if (typeof body.error === 'string') return body.error
    if (body.error && typeof body.error === 'object' && 'message' in body.error) return String(body.error.message)
  } catch {}
  return text || `${res.status} ${res.statusText}`
}

export async function getJson<T> (path: string): Promise<T> {
  return await (await call(path)).json() as T
}

export async function sendJson<T> (method: 'POST' | 'DELETE', path: string, body: unknown): Promise<T> {
  const res = await call(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  return (text ? JSON.parse(text) : {}) as T
}

/**
 * POSTs `body` and calls `onEvent` for each line of the NDJSON answer as it arrives. An error event (a failure
 * after the stream began) throws with its sentence.
 */
export async function stream<T extends { error?: string }> (path: string, body: unknown, onEvent: (event: T) => void, signal?: AbortSignal): Promise<void> {
  const res = await call(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify(body),
    signal,
  })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const handle = (line: string): void => {
    if (line.trim() === '') return
    const event = JSON.parse(line) as T
    if (typeof event.error === 'string') throw new ApiError(500, event.error)
    onEvent(event)
  }
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += value
    let newline
    while ((newline = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      handle(line)
    }
  }
  handle(buffer)
}
