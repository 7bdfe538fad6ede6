import type { Server as HttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { ConfigError } from '../config/config-error.js'
import { formatHostPort } from '../base/host-port.js'
import type { OllamaAddress } from '../config/resolved-config.js'

const REASONS: Record<string, string> = {
  EADDRINUSE: 'the port is in use (another Ollama server, or llamagate already running?)',
  EADDRNOTAVAIL: 'this machine has no such address',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  ENOTFOUND: 'no such host name',
}

/**
 * `ollama_listen`: a second address serving the same app (Ollama's own, 127.0.0.1:11434, by default), for clients
 * that assume Ollama and read NDJSON streams without asking (OpenClaw, Open WebUI, the AI SDK's Ollama provider). Its connections are handed to the app's own
 * HTTP server, so that everything that server does applies to them unchanged: its hooks (Host guard, keys, CORS, the
 * drain's refusals), its timeouts, idle connections closed on close, the drain's cut. The app tells its requests
 * apart by their socket (`has`), for the stream format and the Host guard.
 */
export class OllamaListener {
  private readonly server: Server
  private readonly sockets = new Set<Socket>()
  // Accepted before the app's server listens: handed over once it does, when it tracks its connections.
  private waiting: Socket[] = []
  private port: number

  constructor (readonly address: OllamaAddress, private readonly http: HttpServer) {
    this.port = address.port
    this.server = createServer((socket) => this.accept(socket))
    http.once('listening', () => {
      for (const socket of this.waiting) if (!socket.destroyed) http.emit('connection', socket)
      this.waiting = []
    })
  }

  /** Where Ollama's clients reach it, `http://127.0.0.1:11434` (the port given out when the config said 0). */
  get url (): string {
    return `http://${formatHostPort({ host: this.address.host, port: this.port })}`
  }

  /** Whether a request came in through this listener. */
  has (socket: Socket | null | undefined): boolean {
    return socket != null && this.sockets.has(socket)
  }

  /** Whether it listens (`auto`'s address may have been taken). */
  get listening (): boolean {
    return this.server.listening
  }

  /**
   * Listens, if it can.
   * @returns null once listening; why not, where the address is not `required` (`auto`'s, taken by Ollama itself)
   * @throws ConfigError naming the key when a required address cannot be listened on (in use, not this machine's)
   */
  async start (): Promise<string | null> {
    try {
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject)
        this.server.listen({ host: this.address.host, port: this.address.port }, () => {
          this.server.off('error', reject)
          resolve()
        })
      })
    } catch (err) {
      const reason = REASONS[(err as NodeJS.ErrnoException).code ?? ''] ?? (err as Error).message
      if (!this.address.required) return reason
      throw new ConfigError([`ollama_listen = "${formatHostPort(this.address)}": cannot listen there: ${reason}`])
    }
    this.port = (this.server.address() as { port: number }).port
    return null
  }

  /** Takes no more connections: the port is free at once. Those the app's server never got are closed. */
  stop (): void {
    this.server.close()
    for (const socket of this.waiting) socket.destroy()
    this.waiting = []
  }

  /** Closes what is still open once the app's own close is done (an answer still running). */
  end (): void {
    for (const socket of this.sockets) socket.destroy()
  }

  private accept (socket: Socket): void {
    this.sockets.add(socket)
    socket.once('close', () => this.sockets.delete(socket))
    if (this.http.listening) this.http.emit('connection', socket)
    else this.waiting.push(socket)
  }
}
