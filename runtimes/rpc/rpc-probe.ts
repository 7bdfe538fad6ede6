import { connect, type Socket } from 'node:net'
import type { HostPort } from '../../core/base/host-port.js'

// llama.cpp's RPC protocol (ggml/src/ggml-rpc): a request is | command (1 byte) | size (u64 LE) | data |, an
// answer | size (u64 LE) | data |. HELLO must come first and says the protocol version; a major version other
// than ours means llama-server would refuse the worker too.
export const RPC_CMD = { GET_DEVICE_MEMORY: 11, HELLO: 14, DEVICE_COUNT: 15 } as const
const RPC_PROTOCOL_MAJOR = 7
/** HELLO carries each side's transport capabilities (RDMA); all zero asks for plain TCP. */
const CONN_CAPS_SIZE = 24

export interface RpcDeviceMemory { index: number, freeBytes: number, totalBytes: number }

export type RpcProbe =
  | { state: 'ready', version: string, devices: RpcDeviceMemory[] }
  /** It accepts connections but does not answer: rpc-server serves one client at a time, and another holds it. */
  | { state: 'busy', error: string }
  | { state: 'unreachable', error: string }
  /** It answered, but not as a worker of a llama.cpp this gateway's llama-server can use. */
  | { state: 'incompatible', version: string | null, error: string }

/**
 * rpc-server dies of SIGPIPE when it answers a client that has gone (it writes without MSG_NOSIGNAL), and it
 * serves one connection at a time: a question it has not answered yet is answered later, when whoever holds it
 * lets go. So a question that timed out is not hung up on: its connection stays until the answer comes (or the
 * worker closes it), and meanwhile that worker gets no second question. Keyed by `host:port`.
 */
const waitingForAnswer = new Set<string>()
/** A worker that holds a question this long is given up on all the same. */
const MAX_WAIT_FOR_ANSWER_MS = 3_600_000

/**
 * Asks an RPC worker what it has: HELLO, the device count, each device's free and total memory, on a
 * connection of its own that is closed as soon as it is answered, so that the worker is free for llama-server again.
 */
export async function probeRpcWorker (endpoint: HostPort, timeoutMs = 2000): Promise<RpcProbe> {
  const key = `${endpoint.host}:${endpoint.port}`
  if (waitingForAnswer.has(key)) return { state: 'busy', error: 'an earlier question to it is still waiting for an answer (another client, such as a llama-server, holds it)' }
  let socket: Socket
  try {
    socket = await connectTo(endpoint, timeoutMs)
  } catch (err) {
    return { state: 'unreachable', error: (err as Error).message }
  }
  const reader = new AnswerReader(socket)
  try {
    const hello = await reader.call(RPC_CMD.HELLO, Buffer.alloc(CONN_CAPS_SIZE), timeoutMs)
    if (hello.length < 3) return { state: 'incompatible', version: null, error: `its HELLO answer has ${hello.length} bytes` }
    const version = `${hello[0]}.${hello[1]}.${hello[2]}`
    if (hello[0] !== RPC_PROTOCOL_MAJOR) {
      return { state: 'incompatible', version, error: `it speaks RPC protocol ${version}, this gateway's llama.cpp speaks ${RPC_PROTOCOL_MAJOR}.x: run the same llama.cpp build on every host` }
    }
    const count = (await reader.call(RPC_CMD.DEVICE_COUNT, Buffer.alloc(0), timeoutMs)).readUInt32LE(0)
    const devices: RpcDeviceMemory[] = []
    for (let index = 0; index < count; index++) {
      const request = Buffer.alloc(4)
      request.writeUInt32LE(index)
      const memory = await reader.call(RPC_CMD.GET_DEVICE_MEMORY, request, timeoutMs)
      devices.push({ index, freeBytes: Number(memory.readBigUInt64LE(0)), totalBytes: Number(memory.readBigUInt64LE(8)) })
    }
    return { state: 'ready', version, devices }
  } catch (err) {
    if (err instanceof NoAnswer && err.nothingYet) return { state: 'busy', error: `it accepted the connection but did not answer within ${timeoutMs} ms (another client, such as a llama-server, holds it)` }
    return { state: 'unreachable', error: (err as Error).message }
  } finally {
    hangUpWhenAnswered(socket, reader, key)
  }
}

function hangUpWhenAnswered (socket: Socket, reader: AnswerReader, key: string): void {
  if (!reader.awaitingAnswer) { socket.destroy(); return }
  waitingForAnswer.add(key)
  socket.unref()
  socket.setKeepAlive(true, 10_000)
  const hangUp = (): void => { clearTimeout(timer); waitingForAnswer.delete(key); socket.destroy() }
  const timer = setTimeout(hangUp, MAX_WAIT_FOR_ANSWER_MS)
  timer.unref()
  reader.whenAnswered(hangUp)
}

function connectTo (endpoint: HostPort, timeoutMs: number): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port })
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no connection within ${timeoutMs} ms`)) }, timeoutMs)
    socket.setNoDelay(true)
    socket.once('connect', () => { clearTimeout(timer); socket.removeAllListeners('error'); resolve(socket) })
    socket.once('error', (err: NodeJS.ErrnoException) => { clearTimeout(timer); reject(new Error(err.code === 'ECONNREFUSED' ? 'connection refused (nothing listens there)' : err.message)) })
  })
}

class NoAnswer extends Error {
  constructor (message: string, readonly nothingYet: boolean) { super(message) }
}

/** Reads the answers of one connection in order: each is a little-endian u64 size and that many bytes. */
class AnswerReader {
  private buffered = Buffer.alloc(0)
  private wake: (() => void) | null = null
  private closed: Error | null = null
  private answered = false
  /** A question was sent whose answer has not all arrived. */
  awaitingAnswer = false
  private onAnswered: (() => void) | null = null

  constructor (private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => { this.buffered = Buffer.concat([this.buffered, chunk]); this.wake?.(); this.checkAnswered() })
    socket.on('error', (err) => { this.closed = err; this.wake?.(); this.onAnswered?.() })
    socket.on('close', () => { this.closed ??= new Error('the worker closed the connection'); this.wake?.(); this.onAnswered?.() })
  }

  /** Calls back once the outstanding answer is all in, or the connection is gone. */
  whenAnswered (callback: () => void): void {
    this.onAnswered = callback
    if (this.closed) callback(); else this.checkAnswered()
  }

  private checkAnswered (): void {
    if (this.onAnswered === null || this.buffered.length < 8) return
    if (this.buffered.length >= 8 + Number(this.buffered.readBigUInt64LE(0))) this.onAnswered()
  }

  async call (command: number, data: Buffer, timeoutMs: number): Promise<Buffer> {
    const header = Buffer.alloc(9)
    header.writeUInt8(command, 0)
    header.writeBigUInt64LE(BigInt(data.length), 1)
    this.socket.write(Buffer.concat([header, data]))
    this.awaitingAnswer = true
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (this.buffered.length >= 8) {
        const size = Number(this.buffered.readBigUInt64LE(0))
        if (size > 1024) {
          this.awaitingAnswer = false // not a worker: nothing to wait for
          throw new Error(`an answer of ${size} bytes is not one of the RPC protocol's`)
        }
        if (this.buffered.length >= 8 + size) {
          const answer = this.buffered.subarray(8, 8 + size)
          this.buffered = this.buffered.subarray(8 + size)
          this.answered = true
          this.awaitingAnswer = false
          return answer
        }
      }
      if (this.closed) throw new NoAnswer(this.closed.message, false)
      const left = deadline - Date.now()
      if (left <= 0) throw new NoAnswer(`no answer within ${timeoutMs} ms`, !this.answered && this.buffered.length === 0)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { this.wake = null; resolve() }, left)
        this.wake = () => { clearTimeout(timer); this.wake = null; resolve() }
      })
    }
  }
}
