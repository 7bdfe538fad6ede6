import { version } from '../base/version.js'

/** The server did not answer at all: not running, wrong address, or a network in between. */
export class ServerUnreachableError extends Error {
  override name = 'ServerUnreachableError'
  constructor (readonly url: string, readonly reason: string) {
    super(`could not reach llamagate at ${url} (${reason}). Is it running? Start it with: llamagate serve` +
      ' (or point at another with --host URL or LLAMAGATE_HOST)')
  }
}

/** The server answered with an error: its own sentence, and the status. */
export class ServerError extends Error {
  override name = 'ServerError'
  constructor (readonly status: number, message: string) {
    super(status === 401 ? `${message} (set LLAMAGATE_API_KEY to one of the server's API keys)` : message)
  }
}

/** Why a request never got an answer, in a few words (node's fetch hides it in `cause`). */
function reasonOf (err: unknown): string {
  const cause = (err as { cause?: { code?: string, message?: string } }).cause
  switch (cause?.code) {
    case 'ECONNREFUSED': return 'connection refused'
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'unknown host'
    case 'ECONNRESET': return 'connection reset'
    case 'ETIMEDOUT': case 'UND_ERR_CONNECT_TIMEOUT': return 'timed out'
    default: return cause?.message ?? (err as Error).message
  }
}

/**
 * The command line's one way to the server's native API: JSON calls and NDJSON streams, the API key, and every
 * failure turned into ServerUnreachableError or ServerError with a sentence a person can act on.
 */
export class GatewayClient {
  constructor (readonly url: string, readonly apiKey?: string) {}

  private headers (extra: Record<string, string> = {}): Record<string, string> {
    return {
      'user-agent': `llamagate-cli/${version()}`,
      ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
      ...extra,
    }
  }

  /** Sends a request; the answer's status is checked, its body left to the caller. */
  async send (method: string, path: string, init: { body?: unknown, raw?: NonNullable<RequestInit['body']>, length?: number, signal?: AbortSignal, accept?: string } = {}): Promise<Response> {
    const headers = this.headers({
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.accept ? { accept: init.accept } : {}),
      // A raw body's length, when known: the server can refuse it (its quota, its disk) before a byte is sent.
      ...(init.length !== undefined ? { 'content-length': String(init.length) } : {}),
    })
    let response: Response
    try {
      response = await fetch(`${this.url}${path}`, {
        method,
        headers,
        body: init.raw ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined),
        signal: init.signal,
        ...(init.raw ? { duplex: 'half' } : {}),
      } as RequestInit)
    } catch (err) {
      if (init.signal?.aborted) throw err
      throw new ServerUnreachableError(this.url, reasonOf(err))
    }
    if (!response.ok) throw new ServerError(response.status, await errorMessage(response))
    return response
  }

  /** A JSON call; `undefined` body means none. */
  async json<T> (method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const response = await this.send(method, path, { body, signal })
    return await response.json() as T
  }

  /** True when a request to `path` answers 404; other errors throw. For "is this model here?". */
  async missing (method: string, path: string, body?: unknown): Promise<boolean> {
    try {
      await this.json(method, path, body)
      return false
    } catch (err) {
      if (err instanceof ServerError && err.status === 404) return true
      throw err
    }
  }

  /**
   * A streamed call in NDJSON, one parsed object at a time. An error event (`{"error": ...}`) ends it with a
   * ServerError; an answer cut before the server ended it, with a ServerUnreachableError.
   */
  async * stream<T> (path: string, body: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const response = await this.send('POST', path, { body, signal, accept: 'application/x-ndjson' })
    const decoder = new TextDecoder()
    let pending = ''
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        pending += decoder.decode(chunk, { stream: true })
        let newline: number
        while ((newline = pending.indexOf('\n')) !== -1) {
          const line = pending.slice(0, newline).trim()
          pending = pending.slice(newline + 1)
          if (line !== '') yield parseEvent<T>(line, response.status)
        }
      }
    } catch (err) {
      if (signal?.aborted || err instanceof ServerError) throw err
      throw new ServerUnreachableError(this.url, `the answer was cut: ${reasonOf(err)}`)
    }
    if (pending.trim() !== '') yield parseEvent<T>(pending.trim(), response.status)
  }
}

function parseEvent<T> (line: string, status: number): T {
  let event: unknown
  try {
    event = JSON.parse(line)
  } catch {
    throw new ServerError(status, `the server sent a line that is not JSON: ${line.slice(0, 200)}`)
  }
  const error = (event as { error?: unknown }).error
  if (error !== undefined) throw new ServerError(status, messageOf(error))
  return event as T
}

/** The sentence of an error in any of the server's three shapes. */
function messageOf (error: unknown): string {
  if (typeof error === 'string') return error
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' ? message : JSON.stringify(error)
}

async function errorMessage (response: Response): Promise<string> {
  const text = await response.text().catch(() => '')
  try {
    return messageOf((JSON.parse(text) as { error?: unknown }).error ?? text)
  } catch {
    return text.trim() || `${response.status} ${response.statusText}`
  }
}
