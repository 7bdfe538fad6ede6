import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { toErrorReply } from './error-handler.js'
import { ClientGoneError } from '../base/errors.js'
import { whenDrained } from '../base/when-drained.js'

export type StreamFormat = 'sse' | 'ndjson'

const CONTENT_TYPES: Record<StreamFormat, string> = {
  sse: 'text/event-stream; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
}

/**
 * The format a native stream answers in (contract: Streams): NDJSON when the client asks for it, or asks
 * for JSON without SSE (what the Ollama clients send); SSE when it asks for SSE; else the configured default.
 */
export function negotiateStreamFormat (accept: string | undefined, fallback: StreamFormat): StreamFormat {
  if (!accept) return fallback
  if (accept.includes('text/event-stream')) return 'sse'
  if (accept.includes('application/x-ndjson') || accept.includes('application/json')) return 'ndjson'
  return fallback
}

/**
 * The format of this request's native stream: what its Accept asks for, else its listener's default: NDJSON on
 * `ollama_listen` (Ollama's clients expect it without asking: the AI SDK's provider accepts any type), config's
 * `stream_format` on the main address (SSE, the spec's, also for an Accept of any type, which is what curl sends).
 */
export function streamFormatOf (request: FastifyRequest): StreamFormat {
  const { config, ollamaListener } = request.server
  const fallback = ollamaListener?.has(request.raw.socket) === true ? 'ndjson' : config.streamFormat
  negotiated.add(request)
  return negotiateStreamFormat(request.headers.accept, fallback)
}

// Requests whose stream format their Accept chose: the answer says it varies with Accept (a cache must not give an
// NDJSON answer to a client that asked for SSE).
const negotiated = new WeakSet<FastifyRequest>()

/**
 * One writer for every streamed answer: SSE (`data: <json>\n\n`) or NDJSON (`<json>\n`).
 *
 * Headers go out when the stream opens (the first event, or `open()`), so that anything failing before
 * that still gets a real HTTP status from the error handler. After that, a failure is a last error event
 * and the end of the stream: nothing is silently cut.
 */
export class EventStream {
  private readonly raw: ServerResponse
  private readonly controller = new AbortController()
  private opened = false
  private ended = false
  private wroteData = false

  constructor (private readonly request: FastifyRequest, private readonly reply: FastifyReply, readonly format: StreamFormat) {
    this.raw = reply.raw
    // 'close' fires when the response is finished or the connection is gone; only the second is an abort.
    this.raw.once('close', () => {
      if (!this.raw.writableFinished) this.controller.abort(new ClientGoneError())
    })
  }

  /** Aborted when the client goes away: pass it to whatever produces the events. */
  get signal (): AbortSignal { return this.controller.signal }

  get isOpen (): boolean { return this.opened }

  /** True once an event went out (an SSE comment is none): until then the answer may still start over. */
  get hasData (): boolean { return this.wroteData }

  /**
   * Says something to the client that no client reads as an event, opening the stream: an SSE comment (`: text`,
   * which the SSE spec has every parser skip). NDJSON has no such line (Ollama's clients parse every line as a
   * chunk, and warn on a blank one), so there it only opens the stream: the head goes out, nothing else.
   */
  comment (text: string): void {
    if (!this.opened) this.open()
    if (this.format !== 'sse' || this.ended || this.raw.destroyed) return
    this.raw.write(`: ${text.replaceAll('\n', ' ')}\n\n`)
  }

  /** Sends the headers now (a client sees the stream start before the first event). */
  open (): void {
    if (this.opened) return
    this.opened = true
    if (negotiated.has(this.request)) this.reply.vary('Accept')
    this.reply.hijack()
    this.raw.writeHead(200, {
      ...(this.reply.getHeaders() as Record<string, string>),
      'Content-Type': CONTENT_TYPES[this.format],
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    // The head and an event written in this same tick (a relayed answer's first bytes) leave in one write.
    const socket = this.raw.socket
    socket?.cork()
    this.raw.flushHeaders()
    if (socket) process.nextTick(() => socket.uncork())
  }

  /**
   * The answer's last bytes come next: the socket holds them, and the response's end written after them, until
   * this turn of the event loop is done, so that they leave in one write.
   */
  closing (): void {
    const socket = this.raw.socket
    if (socket === null || socket.destroyed || this.ended) return
    socket.cork()
    setImmediate(() => socket.uncork())
  }

  /** Writes one event. Returns false when the socket is backed up: await `drained()` before the next. */
  send (event: unknown): boolean {
    return this.sendJson(JSON.stringify(event))
  }

  /** Writes one event that is already JSON text (the hot path avoids a parse/stringify round trip). */
  sendJson (json: string): boolean {
    if (!this.opened) this.open()
    if (this.ended || this.raw.destroyed) return true
    this.wroteData = true
    return this.raw.write(this.format === 'sse' ? `data: ${json}\n\n` : `${json}\n`)
  }

  /** Writes bytes that are already whole events in this stream's format (a runtime's stream passed through). */
  writeRaw (chunk: Buffer): boolean {
    if (!this.opened) this.open()
    if (this.ended || this.raw.destroyed) return true
    this.wroteData = true
    return this.raw.write(chunk)
  }

  /**
   * The client's socket, for writing bytes that are already whole chunks of HTTP/1.1 chunked coding (a
   * runtime's stream relayed verbatim), or null when this response is not chunked (an HTTP/1.0 client) or
   * the client is gone. The response's own end still writes the last chunk.
   */
  chunkedSocket (): Socket | null {
    if (!this.opened) this.open()
    const socket = this.raw.socket
    const chunked = (this.raw as ServerResponse & { chunkedEncoding?: boolean }).chunkedEncoding === true
    // Whoever asks for the socket writes events to it.
    this.wroteData = true
    return chunked && socket !== null && !socket.destroyed && !this.ended ? socket : null
  }

  /**
   * Resolves when the response (or `socket`, where bytes are written to it directly) can take more, or the
   * client is gone; a client that takes nothing for config's `limits.stream_stall_timeout` is cut off.
   */
  drained (socket?: Socket): Promise<void> {
    return whenDrained(socket ?? this.raw, this.request.server.config.limits.streamStallMs)
  }

  end (): void {
    if (this.ended) return
    if (!this.opened) this.open()
    this.ended = true
    this.raw.end()
  }

  /**
   * Ends the stream with an error event in the surface's shape. Before the stream opened there is still
   * time for a proper status: the error is rethrown for the error handler.
   */
  fail (err: unknown): void {
    if (!this.opened) throw err
    if (this.ended) return
    const reply = toErrorReply(err, this.request.log)
    const shape = this.request.server.surfaces.errorShapeOf(this.request.url)
    if (this.format === 'sse' && shape.eventName !== undefined && !this.raw.destroyed) this.raw.write(`event: ${shape.eventName}\n`)
    this.sendJson(JSON.stringify(shape.body(reply)))
    this.end()
  }
}

/** Aborted when the client of a (non-streamed) request goes away before its answer was sent. */
export function clientGone (reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort(new ClientGoneError()) })
  return controller.signal
}
