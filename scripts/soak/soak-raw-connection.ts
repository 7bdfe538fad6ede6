import { connect, type Socket } from 'node:net'

// A client no HTTP library would be: one that sends a head and trickles its body, one that never reads, one
// that connects and sends nothing. A plain TCP connection to the gateway, with what came back and when it ended.

export interface RawEnd {
  /** Milliseconds from the connection's start to its close. */
  afterMs: number
  /** The socket's error, when it ended with one (ECONNRESET, EPIPE, ECONNREFUSED). */
  error: string | null
}

export class RawConnection {
  readonly socket: Socket
  readonly localPort: Promise<number | null>
  readonly closed: Promise<RawEnd>
  private readonly started = Date.now()
  private readonly chunks: Buffer[] = []
  private error: string | null = null

  /** `read: false` leaves the socket paused from the start: the kernel's buffers fill and the gateway's writes back up. */
  constructor (port: number, { read = true }: { read?: boolean } = {}) {
    this.socket = connect(port, '127.0.0.1')
    if (!read) this.socket.pause()
    this.socket.on('data', (chunk: Buffer) => { this.chunks.push(chunk) })
    this.socket.on('error', (err: NodeJS.ErrnoException) => { this.error ??= err.code ?? err.message })
    this.localPort = new Promise((resolve) => {
      this.socket.once('connect', () => resolve(this.socket.localPort ?? null))
      this.socket.once('close', () => resolve(null))
    })
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve({ afterMs: Date.now() - this.started, error: this.error })))
  }

  get isClosed (): boolean { return this.socket.destroyed }

  /** What came back so far, as text. */
  text (): string { return Buffer.concat(this.chunks).toString('utf8') }

  /** The status of the answer's head, or null when none came. */
  status (): number | null {
    const match = /^HTTP\/1\.1 (\d{3}) /.exec(this.text())
    return match ? Number(match[1]) : null
  }

  write (data: string): void {
    if (!this.socket.destroyed) this.socket.write(data)
  }

  /** A POST's head (Host and the declared body length included) and the first bytes of its body. */
  sendHead (path: string, bodyLength: number, headers: Record<string, string>, firstBytes = ''): void {
    const port = this.socket.remotePort ?? 0
    const all = { Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json', 'Content-Length': String(bodyLength), ...headers }
    this.write(`POST ${path} HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${firstBytes}`)
  }

  /** Starts reading a paused socket; resolves once it has ended, or with null when it was still open after `ms` (then destroyed). */
  async readToEnd (ms: number): Promise<RawEnd | null> {
    this.socket.resume()
    const end = await this.closedWithin(ms)
    this.socket.destroy()
    return end
  }

  /** Resolves with the end, or null when the connection is still open after `ms`. */
  async closedWithin (ms: number): Promise<RawEnd | null> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<null>((resolve) => { timer = setTimeout(() => resolve(null), ms) })
    try { return await Promise.race([this.closed, late]) } finally { clearTimeout(timer) }
  }

  destroy (): void { this.socket.destroy() }
}
