/**
 * Follows HTTP/1.1 chunked transfer coding over a byte stream without copying the chunks' data: it only
 * reads the size lines, so that a proxy can forward whole chunks verbatim and still know where each one
 * ends, what the last data bytes were, and when the terminating zero-size chunk arrives.
 *
 * Why by hand: the streamed hot path forwards llama-server's chunks as they are (see stream-relay.ts), and no
 * HTTP client library hands out the raw framing; decoding and re-encoding every token costs more than the
 * whole relay otherwise does.
 */
export class ChunkFraming {
  /**
   * Bytes received after the last whole chunk (a chunk cut by the network waits here for its rest), joined once the
   * chunk is whole: joining them on every read made a long chunk quadratic.
   */
  private pending: Buffer[] = []
  private pendingBytes = 0
  /** The bytes the pending chunk takes, framing included, once its size line was read; 0 until then. */
  private pendingNeeds = 0
  /** The last bytes of chunk data seen (at most `tailBytes`), to check how the stream ended. */
  tail: Buffer = Buffer.alloc(0)
  /** True once the zero-size chunk was read: the body is complete. */
  finished = false

  /** `maxChunkBytes`: the largest chunk held while it arrives; a larger one is an error. @default 16 MiB */
  constructor (private readonly tailBytes: number, private readonly maxChunkBytes = MAX_PENDING) {}

  /**
   * Takes the next bytes from the wire; returns the part made of whole chunks, ready to forward as is
   * (possibly empty), without the terminating chunk. @throws on bytes that are not chunked coding
   */
  push (bytes: Buffer): Buffer {
    let data = bytes
    if (this.pendingBytes > 0) {
      this.pending.push(bytes)
      this.pendingBytes += bytes.length
      if (this.pendingBytes > this.maxChunkBytes) throw new OversizedChunkError(this.maxChunkBytes)
      if (this.pendingBytes < this.pendingNeeds) return EMPTY
      data = Buffer.concat(this.pending, this.pendingBytes)
      this.pending = []
      this.pendingBytes = 0
    }
    this.pendingNeeds = 0
    let at = 0
    while (at < data.length && !this.finished) {
      const lineEnd = data.indexOf(CRLF, at)
      if (lineEnd < 0) {
        if (data.length - at > MAX_SIZE_LINE) throw new Error('malformed chunked body: no chunk size line')
        break
      }
      const size = parseChunkSize(data, at, lineEnd)
      if (size === 0) {
        // The last chunk; trailers (llama-server sends none) and the final CRLF are not forwarded: the
        // response writer ends its own chunked body.
        this.finished = true
        return data.subarray(0, at)
      }
      const end = lineEnd + 2 + size + 2
      if (end > data.length) {
        this.pendingNeeds = end - at
        break
      }
      if (data[end - 2] !== 0x0d || data[end - 1] !== 0x0a) throw new Error('malformed chunked body: no CRLF after a chunk')
      this.keepTail(data.subarray(lineEnd + 2, end - 2))
      at = end
    }
    if (at < data.length && !this.finished) {
      if (data.length - at > this.maxChunkBytes || this.pendingNeeds > this.maxChunkBytes) throw new OversizedChunkError(this.maxChunkBytes)
      this.pending = [data.subarray(at)]
      this.pendingBytes = data.length - at
    }
    return data.subarray(0, at)
  }

  /** The data of whole chunks (framing removed), up to a zero-size chunk if there is one. */
  static payload (framed: Buffer): Buffer {
    const parts: Buffer[] = []
    let at = 0
    while (at < framed.length) {
      const lineEnd = framed.indexOf(CRLF, at)
      if (lineEnd < 0) break
      const size = parseChunkSize(framed, at, lineEnd)
      if (size === 0) break
      parts.push(framed.subarray(lineEnd + 2, Math.min(framed.length, lineEnd + 2 + size)))
      at = lineEnd + 2 + size + 2
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
  }

  /** `data` as one chunk of HTTP/1.1 chunked coding, in one buffer (one write). Empty data is no chunk: it would end the body. */
  static chunk (data: Buffer): Buffer {
    if (data.length === 0) return data
    // The size line written in place: a Buffer made of its text cost more than the rest, once per streamed token.
    const size = data.length.toString(16)
    const out = Buffer.allocUnsafe(size.length + 2 + data.length + 2)
    for (let i = 0; i < size.length; i++) out[i] = size.charCodeAt(i)
    out[size.length] = 0x0d
    out[size.length + 1] = 0x0a
    out.set(data, size.length + 2)
    out[out.length - 2] = 0x0d
    out[out.length - 1] = 0x0a
    return out
  }

  /** True when part of a chunk was received and not yet its end. */
  get midChunk (): boolean { return this.pendingBytes > 0 }

  private keepTail (chunkData: Buffer): void {
    this.tail = chunkData.length >= this.tailBytes
      ? chunkData.subarray(chunkData.length - this.tailBytes)
      : Buffer.concat([this.tail, chunkData]).subarray(-this.tailBytes)
  }
}

/** A chunk larger than the framing holds. */
export class OversizedChunkError extends Error {
  constructor (maxBytes: number) { super(`malformed chunked body: a chunk over ${maxBytes} bytes`) }
}

const CRLF = Buffer.from('\r\n')
const EMPTY = Buffer.alloc(0)
// llama-server's events are a few hundred bytes; anything this large is not a stream of events.
const MAX_PENDING = 16 << 20
// A size line is hex digits and perhaps extensions (llama-server sends none).
const MAX_SIZE_LINE = 4096

function parseChunkSize (data: Buffer, start: number, end: number): number {
  let size = 0
  let digits = 0
  for (let i = start; i < end; i++) {
    const c = data[i]!
    const v = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1
    if (v < 0) {
      if (c === 0x3b || c === 0x20 || c === 0x09) break // chunk extensions follow; ignored
      throw new Error('malformed chunked body: bad chunk size')
    }
    if (++digits > 8) throw new Error('malformed chunked body: chunk size too large')
    size = size * 16 + v
  }
  if (digits === 0) throw new Error('malformed chunked body: empty chunk size')
  return size
}
