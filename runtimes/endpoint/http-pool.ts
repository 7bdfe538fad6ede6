import type { Readable } from 'node:stream'
import type { Pool } from 'undici'
import { undici } from '../../core/base/lazy-require.js'
import { GatewayError } from '../../core/base/errors.js'
import { readAtMost, type ReadLimits } from './answer-limits.js'
import { addressTarget, type RuntimeAddress } from './runtime-address.js'
import { runtimeErrorFrom } from './runtime-error.js'

export interface HttpPoolOptions {
  address: RuntimeAddress
  /** How many connections it keeps. */
  connections: number
  /** Sent with every request (an upstream's Authorization). @default none */
  headers?: Record<string, string>
  /** What is read of an answer and of an error answer, and the error past either. @default all of them */
  limits?: ReadLimits
}

/**
 * Whole answers over a pool of kept-alive connections to one server: JSON POSTs and GETs under the address's path,
 * a kept connection closed just as a request went out on it retried once on a fresh one (nothing was generated),
 * and error answers made gateway errors carrying the server's own words (runtime-error.ts). What the llama-server
 * client (runtime-endpoint.ts) and an upstream's client (plugins/upstreams) share.
 */
export class HttpPool {
  private readonly address: RuntimeAddress
  /** The address's own path, put before every request's. */
  private readonly prefix: string
  private readonly size: number
  private readonly headers: Record<string, string> | undefined
  private readonly limits: ReadLimits | undefined
  private connections: Pool | null = null
  private closed = false

  constructor (options: HttpPoolOptions) {
    this.address = options.address
    this.prefix = addressTarget(options.address).prefix
    this.size = options.connections
    this.headers = options.headers
    this.limits = options.limits
  }

  /**
   * POSTs `payload` (JSON, serialized) and returns the answer's body once its status is known to be good: a stream
   * is read by the caller as it comes. @throws the server's refusal, as a gateway error; one that declares more than
   * `limits.answerBytes`
   */
  async post (path: string, payload: string, signal: AbortSignal): Promise<Readable> {
    return this.retried(signal, async () => {
      const response = await this.pool.request({
        method: 'POST', path: this.prefix + path, body: payload, signal,
        headers: { ...this.headers, 'content-type': 'application/json' },
      })
      if (response.statusCode >= 400) throw await this.refusal(response)
      // A whole answer is read within limits.answerBytes (`read`); a stream, by its reader.
      if (this.limits !== undefined && Number(response.headers['content-length']) > this.limits.answerBytes) {
        response.body.destroy()
        throw this.limits.tooLarge('answerBytes')
      }
      return response.body
    })
  }

  /** A GET's whole answer, as text. @throws as `post`, and for any status but 200 */
  async get (path: string, signal: AbortSignal): Promise<string> {
    return this.retried(signal, async () => {
      const response = await this.pool.request({ method: 'GET', path: this.prefix + path, signal, ...(this.headers ? { headers: this.headers } : {}) })
      if (response.statusCode !== 200) throw await this.refusal(response)
      return await this.read(response.body, 'answerBytes', response.headers['content-length'])
    })
  }

  /** A whole body's text within its limit. @throws past the limit (the connection dropped) */
  async read (body: Readable, limit: 'answerBytes' | 'errorBytes' = 'answerBytes', declared?: unknown): Promise<string> {
    const { limits } = this
    return (await readAtMost(body, limits?.[limit] ?? Infinity, () => limits!.tooLarge(limit), declared)).toString('utf8')
  }

  /** Closes the pooled connections, if any were made; a request asked for later gets the pool's "destroyed" error. */
  async close (): Promise<void> {
    this.closed = true
    await this.connections?.destroy().catch(() => {})
  }

  /** `attempt`, made once more when it failed on a kept connection the server had closed; an abort throws its reason. */
  private async retried<T> (signal: AbortSignal, attempt: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt()
      } catch (err) {
        if (signal.aborted) throw signal.reason
        if (tries === 1 && isStaleConnection(err)) continue
        throw err
      }
    }
  }

  /** The gateway error for an error answer, its body read within limits.errorBytes (past them, that is the error). */
  private async refusal (response: { statusCode: number, headers: Record<string, unknown>, body: Readable }): Promise<Error> {
    let text = ''
    try {
      text = await this.read(response.body, 'errorBytes', response.headers['content-length'])
    } catch (err) {
      // A body cut off short: the status alone says it.
      if (err instanceof GatewayError) return err
    }
    return runtimeErrorFrom(response.statusCode, text)
  }

  /**
   * Made on first use: streamed requests relay over sockets of their own, and making the pool took ~0.16 ms of a
   * cold start.
   */
  private get pool (): Pool {
    if (this.connections === null) {
      const { socketPath } = this.address
      // llama-server closes idle keep-alive connections after 5 s (uvicorn and Node too); ours close sooner, so that
      // no request is ever sent on a socket the server is about to close. The pool takes the origin; paths get the prefix.
      this.connections = new (undici().Pool)(addressTarget(this.address).origin, {
        connections: this.size, keepAliveTimeout: 4000, keepAliveMaxTimeout: 4000,
        ...(socketPath !== null ? { socketPath } : {}),
      })
      // Asked for after the close: the request gets the pool's own "destroyed" error, and no pool is left open.
      if (this.closed) void this.connections.destroy().catch(() => {})
    }
    return this.connections
  }
}

/**
 * Loads the HTTP client the pools are made with (undici's 130 files, 50-100 ms on a 2-core machine), if no pool has
 * yet: a launcher calls it while llama-server reads its model, so that the first request after the first load does
 * not wait for it.
 */
export function loadHttpClient (): void {
  undici()
}

function isStaleConnection (err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE'
}
