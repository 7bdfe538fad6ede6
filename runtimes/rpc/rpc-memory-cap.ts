import { connect, createServer, type Server, type Socket } from 'node:net'
import { RPC_CMD } from './rpc-probe.js'

/**
 * Commands of RPC protocol 7 that the worker answers (the others it only reads): the relay must know which, to
 * tell one answer from the next. From the server loop in ggml/src/ggml-rpc/ggml-rpc.cpp.
 */
const ANSWERED = new Set([0 /* ALLOC_BUFFER */, 1 /* GET_ALIGNMENT */, 2 /* GET_MAX_SIZE */, 3 /* BUFFER_GET_BASE */,
  7 /* SET_TENSOR_HASH */, 8 /* GET_TENSOR */, 9 /* COPY_TENSOR */, RPC_CMD.GET_DEVICE_MEMORY, 13 /* GET_ALLOC_SIZE */,
  RPC_CMD.HELLO, RPC_CMD.DEVICE_COUNT])

/**
 * llama.cpp's rpc-server lost its memory flag when it learned several devices, and a CPU device reports all of
 * the machine's memory. `llamagate rpc-worker --mem` puts this relay in front of it: everything passes through
 * as it is, except the answers to GET_DEVICE_MEMORY, whose free and total are capped. llama-server splits a
 * model's layers by what the devices report, so the cap sets this worker's share. It does not limit what
 * the worker allocates.
 */
export function startMemoryCapRelay (opts: { listen: { host: string, port: number }, target: { host: string, port: number }, capBytes: number }): Promise<Server> {
  const server = createServer((client) => relay(client, opts.target, BigInt(opts.capBytes)))
  return new Promise<Server>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.listen.port, opts.listen.host, () => { server.off('error', reject); resolve(server) })
  })
}

function relay (client: Socket, target: { host: string, port: number }, cap: bigint): void {
  const upstream = connect(target)
  client.setNoDelay(true)
  upstream.setNoDelay(true)
  // The client gone: the worker is told by an end of stream, and whatever it still writes is read and dropped (it
  // dies of SIGPIPE writing to a closed connection). The worker gone: so is the client's connection.
  client.on('error', () => upstream.end()).on('close', () => upstream.end())
  upstream.on('error', () => { client.destroy(); upstream.destroy() }).on('close', () => client.destroy())
  // The commands sent whose answers are still to come, oldest first (the worker answers in order).
  const awaiting: number[] = []
  const requests = new Framer(9, (header) => {
    const command = header.readUInt8(0)
    if (ANSWERED.has(command)) awaiting.push(command)
    return Number(header.readBigUInt64LE(1))
  }, (chunk) => upstream.write(chunk))
  let capNext = false
  const answers = new Framer(8, (header) => {
    capNext = awaiting.shift() === RPC_CMD.GET_DEVICE_MEMORY
    return Number(header.readBigUInt64LE(0))
  }, (chunk) => { if (!client.destroyed) client.write(chunk) }, (body) => {
    if (!capNext || body.length !== 16) return body
    const capped = Buffer.from(body)
    for (const at of [0, 8]) capped.writeBigUInt64LE(min(capped.readBigUInt64LE(at), cap), at)
    return capped
  })
  client.on('data', (chunk: Buffer) => requests.push(chunk))
  upstream.on('data', (chunk: Buffer) => answers.push(chunk))
}

function min (a: bigint, b: bigint): bigint { return a < b ? a : b }

/**
 * Splits a byte stream into | header | body of the size the header says |, passing everything on as it comes.
 * A body is held back whole only when `rewrite` is given and it is small (an answer to rewrite); others stream.
 */
class Framer {
  private header = Buffer.alloc(0)
  private bodyLeft = 0
  private held: Buffer[] | null = null

  constructor (
    private readonly headerSize: number,
    private readonly bodySize: (header: Buffer) => number,
    private readonly out: (chunk: Buffer) => void,
    private readonly rewrite?: (body: Buffer) => Buffer,
  ) {}

  push (chunk: Buffer): void {
    while (chunk.length > 0) {
      if (this.bodyLeft === 0 && this.held === null) {
        const need = this.headerSize - this.header.length
        this.header = Buffer.concat([this.header, chunk.subarray(0, need)])
        chunk = chunk.subarray(need)
        if (this.header.length < this.headerSize) return
        this.bodyLeft = this.bodySize(this.header)
        this.out(this.header)
        this.header = Buffer.alloc(0)
        if (this.rewrite && this.bodyLeft <= 64) this.held = []
        if (this.bodyLeft === 0) this.flushHeld()
        continue
      }
      const part = chunk.subarray(0, this.bodyLeft)
      chunk = chunk.subarray(part.length)
      this.bodyLeft -= part.length
      if (this.held !== null) this.held.push(part); else this.out(part)
      if (this.bodyLeft === 0) this.flushHeld()
    }
  }

  private flushHeld (): void {
    if (this.held === null) return
    const body = Buffer.concat(this.held)
    this.held = null
    if (body.length > 0) this.out(this.rewrite!(body))
  }
}
