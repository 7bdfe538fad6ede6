import { Readable } from 'node:stream'
import type { BackendSpec } from '../../core/platform/backends.js'
import { GatewayError, RuntimeError } from '../../core/base/errors.js'
import { readAtMost, runtimeErrorFrom, sseData, type ReadLimits, type RelayProgress, type RelaySink } from '../../runtimes/index.js'
import { answerLines } from './detours/answer-lines.js'
import type { UpstreamClient } from './upstream-endpoint.js'

/** How long a backend may take to begin its answer, or to send its next piece, unless its spec says. */
export const BACKEND_TIMEOUT_MS = 300_000

/**
 * The client of one model of a plugin's backend (core/platform/backends.ts), in its own OpenAI-compatible paths: what
 * UpstreamModelClient is for an upstream reached over HTTP, with the plugin's `fetch` in place of the network. Its
 * answers are read within limits.upstream_*, each wait bounded by the spec's `timeoutMs`; a throw, a hang and an
 * error status are runtime errors (a 502 naming the backend, from the upstream leases), never the gateway's own.
 */
export class BackendClient implements UpstreamClient {
  readonly name: string
  private readonly timeoutMs: number

  constructor (private readonly spec: BackendSpec, private readonly limits: ReadLimits) {
    this.name = `backend ${spec.name}`
    this.timeoutMs = spec.timeoutMs ?? BACKEND_TIMEOUT_MS
  }

  async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    const answer = await this.request(path, body, signal)
    return (await readAtMost(answer, this.limits.answerBytes, () => this.limits.tooLarge('answerBytes'))).toString('utf8')
  }

  async postJson<T = unknown> (path: string, body: unknown, signal: AbortSignal): Promise<T> {
    return JSON.parse(await this.post(path, body, signal)) as T
  }

  async events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    return answerLines(await this.request(path, body, signal), this.limits)
  }

  lines (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    return this.events(path, body, signal)
  }

  /** The stream's events to the client's sink as stream-relay.ts writes a runtime's: whole events, the surface's rewrite applied. */
  async relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    const answer = await this.request(path, JSON.parse(payload), signal)
    const rewrite = progress.rewrite
    let opened = false
    const open = (): void => {
      if (opened) return
      opened = true
      sink.open()
    }
    const send = async (bytes: Buffer): Promise<void> => {
      open()
      if (bytes.length > 0 && !sink.writeRaw(bytes)) await sink.drained()
    }
    for await (const data of sseData(answer, this.limits)) {
      const bytes = Buffer.from(`data: ${data}\n\n`)
      if (!opened) progress.firstData?.()
      const wanted = (progress.headBytes ?? 0) - (progress.head?.length ?? 0)
      if (wanted > 0) progress.head = Buffer.concat([progress.head ?? Buffer.alloc(0), bytes.subarray(0, wanted)])
      progress.tail = Buffer.concat([progress.tail, bytes]).subarray(-progress.tailBytes)
      progress.onEvents?.(1)
      await send(rewrite?.push(bytes) ?? bytes)
    }
    if (rewrite !== undefined) await send(rewrite.end())
    open()
    sink.closing?.()
  }

  async close (): Promise<void> {}

  /**
   * The plugin's answer's body once its status is good, read under the bound; `signal` (and the bound) abort what
   * the plugin was given. @throws RuntimeError (it threw, or hung), the error answer as a runtime's
   */
  private async request (path: string, body: unknown, signal: AbortSignal): Promise<Readable> {
    const controller = new AbortController()
    const abort = (): void => controller.abort(signal.reason)
    signal.addEventListener('abort', abort, { once: true })
    const bound = new Bound(this.timeoutMs, (err) => controller.abort(err))
    try {
      const response = await bound.race(this.called(path, body, controller.signal), signal)
      if (typeof response?.ok !== 'boolean' || typeof response.status !== 'number') throw new RuntimeError('its fetch() resolved with no Response', [], 'backend_failed')
      const reader = response.body?.getReader()
      if (!response.ok) {
        const text = reader === undefined ? '' : (await readAtMost(Readable.from(this.chunks(reader, bound, signal)), this.limits.errorBytes, () => this.limits.tooLarge('errorBytes'))).toString('utf8')
        throw runtimeErrorFrom(response.status, text)
      }
      return Readable.from(reader === undefined ? [] : this.chunks(reader, bound, signal, () => signal.removeEventListener('abort', abort)))
    } catch (err) {
      signal.removeEventListener('abort', abort)
      bound.clear()
      throw err
    }
  }

  private async called (path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    try {
      return await this.spec.fetch(path, body as Record<string, unknown>, signal)
    } catch (err) {
      if (signal.aborted) throw signal.reason
      if (err instanceof GatewayError) throw err
      throw new RuntimeError(`it threw: ${(err as Error)?.message ?? String(err)}`, [], 'backend_failed')
    }
  }

  /** The body's bytes, each read under the bound; leaving early cancels the plugin's stream. */
  private async * chunks (reader: ReadableStreamDefaultReader<Uint8Array>, bound: Bound, signal: AbortSignal, done?: () => void): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const { value, done: ended } = await bound.race(reader.read(), signal)
        if (ended) return
        yield Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      }
    } finally {
      bound.clear()
      done?.()
      reader.cancel().catch(() => {})
    }
  }
}

/** One request's bound: each wait on the plugin may last `ms`; past it the wait fails naming the bound. */
class Bound {
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly ms: number, private readonly expired: (err: Error) => void) {}

  race<T> (wait: Promise<T>, signal: AbortSignal): Promise<T> {
    this.clear()
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason)
      if (signal.aborted) { onAbort(); return }
      signal.addEventListener('abort', onAbort, { once: true })
      this.timer = setTimeout(() => {
        const err = new RuntimeError(`it sent nothing for ${this.ms} ms (its timeoutMs)`, [], 'backend_timeout')
        this.expired(err)
        reject(err)
      }, this.ms)
      wait.then(resolve, reject).finally(() => {
        this.clear()
        signal.removeEventListener('abort', onAbort)
      })
    })
  }

  clear (): void {
    clearTimeout(this.timer)
  }
}
