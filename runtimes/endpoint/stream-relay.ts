import { connect, isIP, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'
import { RuntimeError } from '../../core/base/errors.js'
import type { AnswerLimits, ReadLimits } from './answer-limits.js'
import { eventsIn } from './sse-bytes.js'
import { ChunkFraming, OversizedChunkError } from './chunk-framing.js'
import { chainedRewrites, MAX_HELD_BYTES, type DataRewrite } from './data-rewrite.js'
import { ReadSlab } from './read-slab.js'
import type { RelaySockets } from './relay-sockets.js'
import { addressTarget, type RuntimeAddress } from './runtime-address.js'
import { runtimeErrorFrom } from './runtime-error.js'

/** How long a runtime may send nothing in the middle of a stream before the request is given up. */
const SILENCE_MS = 300_000
const HEAD_END = Buffer.from('\r\n\r\n')
const LAST_CHUNK = Buffer.from('0\r\n\r\n')
const MAX_HEAD = 64 << 10

/**
 * Where a relayed stream goes: the client's response (core/server/event-stream.ts's EventStream is one). Opened once
 * the runtime said 200; anything before that is an error answer, rejected for the caller to report.
 */
export interface RelaySink {
  /** Sends the response head. */
  open(): void
  /** The client's socket when its response is chunked too (whole chunks go there verbatim), else null. */
  chunkedSocket(): Socket | null
  /** Writes bytes that are already whole events; false when backed up. */
  writeRaw(chunk: Buffer): boolean
  /** Resolves when the client (or its socket, given) can take more, or is gone: a client that stalls is cut. */
  drained(socket?: Socket): Promise<void>
  /** The answer's last bytes come next: they may leave with the response's own end, in one write. */
  closing?(): void
  /** Bytes it holds back for now (an event not yet ended, for a sink that reads events): bounded like a rewrite's. */
  readonly heldBytes?: number
}

/** `sink` as it is, and whether its head went out yet: a relay that failed before that may be made again elsewhere. */
export function watchedSink (sink: RelaySink): { sink: RelaySink, opened: () => boolean } {
  let opened = false
  return {
    sink: {
      open: () => { opened = true; sink.open() },
      chunkedSocket: () => sink.chunkedSocket(),
      writeRaw: (chunk) => sink.writeRaw(chunk),
      drained: (socket) => sink.drained(socket),
      closing: () => sink.closing?.(),
      get heldBytes () { return sink.heldBytes },
    },
    opened: () => opened,
  }
}

/** One relayed POST. */
export interface RelayRequest {
  /** The model, for messages. */
  name: string
  address: RuntimeAddress
  /** The path, under the address's own path if it has one. */
  path: string
  /** Sent with the request besides the gateway's own (an upstream's Authorization). @default none */
  headers?: Record<string, string>
  /** The JSON body, serialized. */
  payload: string
  sink: RelaySink
  progress: RelayProgress
  /** Aborted when the client goes or the runtime is stopped: the relay ends with its reason. */
  signal: AbortSignal
  /**
   * Connections kept between streams (an upstream keeps them alive; llama-server closes its own after every stream):
   * one is taken if idle, and given back when the answer ended cleanly. @default none: a connection per stream
   */
  sockets?: RelaySockets
  /**
   * Rewrites each forwarded piece of the body (whole chunks' data). A piece it changed goes to the client framed
   * again, as one chunk; the others as they came. @default none: bytes as they came
   */
  rewrite?: DataRewrite
  /**
   * The most bytes read of the answer, of an error answer, and of one chunk held whole (an upstream's): past one the
   * relay fails with the limits' own error, and the connection is dropped. @default none past the framing's own 16 MiB chunk
   */
  limits?: ReadLimits
}

/** A kept connection the upstream had closed as the request went out: nothing was answered, so it is sent again. */
class StaleSocket extends Error {}

export interface RelayProgress {
  /** How many of the last bytes of the body to keep in `tail`. */
  readonly tailBytes: number
  /** The last bytes of the body forwarded so far, kept up to date also when the relay fails: how did it end? */
  tail: Buffer
  /** Called once, as the first bytes of the body go to the client: llama-server sends them with the first token. */
  firstData?: () => void
  /** How many of the first bytes of the body to keep in `head` (an Anthropic stream's prompt count is in its first event). @default 0 */
  readonly headBytes?: number
  /** The first bytes of the body, up to `headBytes`. */
  head?: Buffer
  /** Told how many events (SSE's blank-line ends) each forwarded piece held, as it goes to the client. @default none */
  onEvents?: (count: number) => void
  /**
   * The surface's own rewrite of the body (its answers made to its API's letter), after the relay's own (RelayRequest's
   * `rewrite`); `tail` and `head` keep the bytes as they came. @default none
   */
  rewrite?: DataRewrite
}

/**
 * Streams a runtime's answer to a POST straight into the client's response: the hot path of streamed completions.
 * A plain socket, because llama-server's chunked body is framed as the client's response is: whole chunks go to
 * the client's socket as they came, with no parsing or re-encoding. One connection per stream, since llama-server
 * closes it after every streamed answer; every read is forwarded at once (batching delays llama-server's next
 * write). docs/benchmarks.md, "The streamed relay", has the measurements behind each choice.
 *
 * Resolves once the runtime ended the body properly (`progress.tail` then holds its last bytes); rejects when
 * the runtime answered an error (before anything was sent to the client), broke off, or `signal` was aborted.
 */
export function relayStream (request: RelayRequest): Promise<void> {
  const kept = request.sockets?.take() ?? null
  if (kept === null) return relayOnce(request, null)
  return relayOnce(request, kept).catch(async (err: unknown) => {
    if (err instanceof StaleSocket) return relayOnce(request, null)
    throw err
  })
}

/** One relay on `kept` (a connection kept from an earlier stream) or on a new connection. */
function relayOnce ({ name, address, path, headers, payload, sink: stream, progress, signal, sockets, rewrite: own, limits }: RelayRequest, kept: Socket | null): Promise<void> {
  const rewrite = chainedRewrites(own, progress.rewrite) ?? undefined
  const { socketPath } = address
  const target = addressTarget(address)
  let extraHead = ''
  for (const [header, value] of Object.entries(headers ?? {})) extraHead += `${header}: ${value}\r\n`
  return new Promise<void>((resolve, reject) => {
    // Its 64 KiB block only for a connection read through `onread`: one read by events (kept, or TLS) never uses it.
    let slab: ReadSlab | null = null
    const onread = { buffer: () => (slab ??= new ReadSlab()).next(), callback: (n: number, space: Uint8Array): boolean => { onBytes(slab!.take(space as Buffer, n)); return true } }
    // A connection that may be kept is read by event (onread is fixed when a socket is made, to one relay's reader).
    const byEvent = sockets !== undefined || (target.tls && socketPath === null)
    const upstream = kept ?? (socketPath !== null
      ? connect({ path: socketPath, ...(byEvent ? {} : { onread }) })
      : target.tls
        // An https upstream: the same bytes over TLS, the certificate checked.
        ? connectTls({ host: target.host, port: target.port, servername: isIP(target.host) === 0 ? target.host : undefined, ALPNProtocols: ['http/1.1'] })
        : connect({ host: target.host, port: target.port, noDelay: true, ...(byEvent ? {} : { onread }) }))
    if (target.tls && socketPath === null && kept === null) upstream.setNoDelay(true)
    if (byEvent) upstream.on('data', onBytes)
    // A kept connection may have been paused by the last stream's client backing up.
    if (kept !== null) kept.resume()
    let settled = false
    // Whether any byte of the answer came: a kept connection that fails before that was stale, not the request.
    let answered = false
    // The answer ended cleanly, with nothing after it, and the upstream did not say it closes: the connection may serve the next stream.
    let reusable = false
    const onError = (err: unknown): void => finish(err)
    const onClose = (): void => finish(new Error('the runtime ended the stream early'))
    // The error answer read whole: the runtime's own words, as a gateway error.
    const refused = (): void => {
      const body = Buffer.concat(errorBody)
      errorBody = []
      finish(runtimeErrorFrom(errorStatus, (framing !== null ? ChunkFraming.payload(body) : body).toString('utf8')))
    }
    const onEnd = (): void => {
      if (errorStatus !== 0) {
        refused()
      } else if (head === null && framing === null) {
        complete() // an identity body ends with the connection
      } else {
        finish(new Error('the runtime ended the stream early'))
      }
    }
    const finish = (err: unknown): void => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      // The answer (or the runtime's refusal) read whole: the connection is fit for the next stream.
      if (reusable && sockets !== undefined) {
        upstream.setTimeout(0)
        upstream.removeListener('timeout', onSilence)
        upstream.removeListener('data', onBytes)
        upstream.removeListener('error', onError)
        upstream.removeListener('close', onClose)
        upstream.removeListener('end', onEnd)
        sockets.give(upstream)
      } else {
        upstream.destroy()
      }
      if (err !== null && kept !== null && !answered && !signal.aborted) reject(new StaleSocket('the kept connection was closed'))
      else if (err === null) resolve()
      else reject(err)
    }
    const onAbort = (): void => finish(signal.reason)
    if (signal.aborted) { onAbort(); return }
    signal.addEventListener('abort', onAbort, { once: true })
    const onSilence = (): void => finish(new RuntimeError(`the runtime of model "${name}" sent nothing for ${SILENCE_MS / 1000} s`))
    upstream.setTimeout(SILENCE_MS, onSilence)
    upstream.once('error', onError)
    upstream.once('close', onClose)
    upstream.once('end', onEnd)
    const connection = sockets !== undefined ? 'keep-alive' : 'close'
    upstream.write(`POST ${target.prefix}${path} HTTP/1.1\r\nHost: ${target.hostHeader}\r\n${extraHead}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nConnection: ${connection}\r\n\r\n${payload}`)

    let head: Buffer | null = Buffer.alloc(0)
    let framing: ChunkFraming | null = null
    // Bytes of a body whose length the head gave (not chunked): Infinity until it is known.
    let remaining = Infinity
    let errorStatus = 0
    let errorBody: Buffer[] = []
    let errorBytes = 0
    // Bytes of the body read so far (counted against limits.answerBytes).
    let bodyBytes = 0
    let client: Socket | null = null
    let sentData = false

    const backOff = (drained: Promise<void>): void => {
      upstream.pause()
      void drained.then(() => { if (!settled) upstream.resume() })
    }
    // Whole chunks go to the client's socket as they are when its response is chunked too (renamed ones framed
    // again); otherwise (an HTTP/1.0 client) the data is unframed first.
    const forward = (bytes: Buffer, framed: boolean): void => {
      if (bytes.length === 0) return
      if (!sentData) {
        sentData = true
        progress.firstData?.()
      }
      if (progress.onEvents !== undefined) progress.onEvents(eventsIn(bytes))
      // The data without its framing, unframed once and only if something needs it.
      let unframed: Buffer | null = null
      const data = (): Buffer => (unframed ??= framed ? ChunkFraming.payload(bytes) : bytes)
      const wanted = (progress.headBytes ?? 0) - (progress.head?.length ?? 0)
      if (wanted > 0) progress.head = Buffer.concat([progress.head ?? Buffer.alloc(0), data().subarray(0, wanted)])
      const rewritten = rewrite === undefined ? null : rewrite.push(data())
      // An event never ended is held no longer than a line may be (a hostile upstream's, or a broken runtime's).
      send(rewritten ?? (client !== null ? bytes : data()), rewritten !== null)
      const heldMax = limits?.lineBytes ?? MAX_HELD_BYTES
      if ((rewrite?.heldBytes ?? 0) + (stream.heldBytes ?? 0) > heldMax) throw new OversizedChunkError(heldMax)
    }
    // To the client: whole chunks as they are, or data (`unframed`) framed here when its response is chunked.
    const send = (bytes: Buffer, unframed: boolean): void => {
      if (bytes.length === 0) return
      if (client !== null) {
        // Rewritten data is framed again here, as one chunk in one write (the response's own write takes four pieces).
        if (!client.write(unframed ? ChunkFraming.chunk(bytes) : bytes)) backOff(stream.drained(client))
      } else if (!stream.writeRaw(bytes)) {
        backOff(stream.drained())
      }
    }
    // The answer ended whole: what the rewrite kept back goes last.
    const complete = (): void => {
      if (rewrite !== undefined) send(rewrite.end(), true)
      finish(null)
    }
    const tooLarge = (limit: keyof AnswerLimits): void => finish(limits!.tooLarge(limit))

    // Whether the upstream said it closes the connection after this answer.
    let closes = false
    // The last chunk and its CRLF ended this read, with no trailer and nothing after them, and the connection stays open.
    const endsCleanly = (bytes: Buffer): boolean => !closes && bytes.length >= LAST_CHUNK.length && bytes.subarray(-LAST_CHUNK.length).equals(LAST_CHUNK)
    function onBytes (bytes: Buffer): void {
      answered = true
      try {
        if (head !== null) {
          const seen: Buffer = head.length === 0 ? bytes : Buffer.concat([head, bytes])
          const end = seen.indexOf(HEAD_END)
          if (end < 0) {
            if (seen.length > MAX_HEAD) throw new Error('the runtime sent an oversized response head')
            head = seen
            return
          }
          head = null
          const text = seen.toString('latin1', 0, end + 2)
          const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0)
          if (status === 0) throw new Error('the runtime answered something that is not HTTP')
          const chunked = /\r\ntransfer-encoding:[^\r]*chunked/i.test(text)
          closes = /\r\nconnection:[^\r]*close/i.test(text)
          const length = /\r\ncontent-length:\s*(\d+)/i.exec(text)
          if (!chunked && length !== null) remaining = Number(length[1])
          if (chunked) framing = new ChunkFraming(progress.tailBytes, limits?.lineBytes)
          if (status === 200) {
            stream.open()
            client = chunked ? stream.chunkedSocket() : null
          } else {
            errorStatus = status
          }
          bytes = seen.subarray(end + 4)
        }
        // A kept-alive connection is not closed after an answer: its end is where its framing or length says.
        if (errorStatus !== 0) {
          errorBytes += bytes.length
          if (limits !== undefined && errorBytes > limits.errorBytes) return tooLarge('errorBytes')
          if (framing !== null) {
            errorBody.push(framing.push(bytes))
            if (framing.finished) { reusable = endsCleanly(bytes); refused() }
          } else {
            errorBody.push(bytes)
            remaining -= bytes.length
            if (remaining <= 0) { reusable = !closes && remaining === 0; refused() }
          }
          return
        }
        bodyBytes += bytes.length
        if (limits !== undefined && bodyBytes > limits.answerBytes) return tooLarge('answerBytes')
        if (framing !== null) {
          const data = framing.push(bytes)
          if (framing.finished) stream.closing?.()
          forward(data, true)
          progress.tail = framing.tail
          if (framing.finished) {
            reusable = endsCleanly(bytes)
            complete()
          }
        } else {
          forward(bytes, false)
          remaining -= bytes.length
          progress.tail = Buffer.concat([progress.tail, bytes]).subarray(-progress.tailBytes)
          if (remaining <= 0) complete()
        }
      } catch (err) {
        finish(err instanceof OversizedChunkError && limits !== undefined ? limits.tooLarge('lineBytes') : err)
      }
    }
  })
}
