import type { Server } from 'node:http'
import type { Socket } from 'node:net'

// Closing a refused socket at once, its request still unread, makes the kernel reset it and the client lose the
// 503; a client that reads the answer closes first, one that does not is cut after this.
const REFUSAL_LINGER_MS = 2_000
// A connection without a key may be closed to make room only once it has sent nothing for this long: a client's
// new connection sends its request within milliseconds, and one sending is about to show its key.
const EVICTABLE_AFTER_MS = 1_000

export interface ConnectionCapsOptions {
  /** Open connections one remote address may hold (`limits.connections_per_client`). */
  perClient: number
  /**
   * Connections no request has yet shown a valid API key on (`limits.unauthenticated_connections`); null: no cap
   * (API keys are off, so every connection is as good as authenticated).
   */
  unauthenticated: number | null
  /** Where refusals and closings are told (the app's log). */
  log: { info: (details: object, message: string) => void }
}

/**
 * Connection caps at the door, before a byte of a request is read: one remote address holds `perClient`
 * connections at most (the next is answered 503 and closed; its others are untouched), and with API keys on,
 * at most `unauthenticated` connections wait for a key: past that the oldest of them that has sent nothing for a
 * second is closed to make room, so that a client holding many without a key cannot lock out one whose first
 * request brings it. Newer and sending ones are let in over the cap, up to twice it; past that a new connection
 * is answered 503 and closed, for the second until the silent ones may go.
 */
export class ConnectionCaps {
  private readonly perAddress = new Map<string, number>()
  // Each with when it was accepted; insertion order is age order, the first the oldest.
  private readonly waitingForKey = new Map<Socket, number>()
  private readonly refusing = new Set<Socket>()
  private readonly admitted = new Set<Socket>()
  private keysOn: boolean

  constructor (private readonly options: ConnectionCapsOptions) {
    this.keysOn = options.unauthenticated !== null
  }

  /** Whether keys are on (the security plugin says, and says again when a keys file turns them on or off). */
  requireKeys (on: boolean): void {
    this.keysOn = on
    if (!on) this.waitingForKey.clear()
  }

  /**
   * Puts the caps in front of `server`'s own connection handling (Node's HTTP parser): a refused connection never
   * reaches it. Connections handed in with `server.emit('connection', socket)` (the Ollama listener) pass here too.
   */
  guard (server: Server): void {
    const handlers = server.listeners('connection') as Array<(socket: Socket) => void>
    server.removeAllListeners('connection')
    server.on('connection', (socket: Socket) => {
      if (this.admit(socket)) for (const handler of handlers) handler.call(server, socket)
    })
  }

  /** A request on `socket` showed a valid key: the connection no longer counts against the unauthenticated cap. */
  authenticate (socket: Socket | null | undefined): void {
    if (socket) this.waitingForKey.delete(socket)
  }

  /** Open connections, in all or from one address (written as `clientAddress` gives it). */
  open (address?: string): number {
    if (address !== undefined) return this.perAddress.get(address) ?? 0
    let total = 0
    for (const count of this.perAddress.values()) total += count
    return total
  }

  /** Open connections still waiting for a request with a valid key (0 with keys off). */
  get unauthenticated (): number {
    return this.waitingForKey.size
  }

  /**
   * Cuts what closing the server would otherwise wait for: the refused connections still being answered, and those
   * that never sent a byte (a client's spare or speculative connection), which Node's closeIdleConnections does not
   * count as idle: the close would wait for the client, or for limits.header_timeout.
   */
  stop (): void {
    for (const socket of this.refusing) socket.destroy()
    for (const socket of this.admitted) if (socket.bytesRead === 0) socket.destroy()
  }

  private admit (socket: Socket): boolean {
    const address = clientAddress(socket)
    const count = this.perAddress.get(address) ?? 0
    if (count >= this.options.perClient) {
      this.options.log.info({ client: address, cap: this.options.perClient }, 'too many connections from one client: a new one refused')
      this.refuse(socket, `too many connections from ${address} (the server's limit is ${this.options.perClient}, limits.connections_per_client); close some and retry`)
      return false
    }
    const cap = this.keysOn ? this.options.unauthenticated : null
    if (cap !== null && !this.makeRoom(cap)) {
      this.options.log.info({ client: address, cap }, 'too many new connections without an API key: a new one refused')
      this.refuse(socket, `too many new connections without an API key (the server's limit is twice ${cap}, limits.unauthenticated_connections); retry in a second`)
      return false
    }
    this.perAddress.set(address, count + 1)
    this.admitted.add(socket)
    socket.once('close', () => {
      this.admitted.delete(socket)
      const left = (this.perAddress.get(address) ?? 1) - 1
      if (left > 0) this.perAddress.set(address, left)
      else this.perAddress.delete(address)
      this.waitingForKey.delete(socket)
    })
    if (cap !== null) this.waitingForKey.set(socket, Date.now())
    return true
  }

  /**
   * Room for one more connection without a key: the oldest that have sent nothing for a while go while the cap is
   * reached. False when the cap is reached twice over by connections that may not go yet.
   */
  private makeRoom (cap: number): boolean {
    const now = Date.now()
    for (const [socket, acceptedAt] of this.waitingForKey) {
      if (this.waitingForKey.size < cap) return true
      // Age order: every later one is younger still.
      if (now - acceptedAt < EVICTABLE_AFTER_MS) break
      if (socket.bytesRead > 0) continue
      this.waitingForKey.delete(socket)
      this.options.log.info({ client: clientAddress(socket), cap }, 'too many connections without an API key: the oldest silent one closed to make room')
      socket.destroy()
    }
    return this.waitingForKey.size < 2 * cap
  }

  /** A 503 with Retry-After written before the request is read, then the connection closed. */
  private refuse (socket: Socket, message: string): void {
    const body = JSON.stringify({ error: message })
    this.refusing.add(socket)
    socket.once('close', () => this.refusing.delete(socket))
    socket.on('error', () => {})
    socket.setTimeout(REFUSAL_LINGER_MS, () => socket.destroy())
    socket.end(`HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    // What the client sent is read and dropped, so that it can finish sending and read the answer.
    socket.resume()
  }
}

/** The client's address, an IPv4 client on a dual-stack socket (`::ffff:10.0.0.5`) written as IPv4. */
export function clientAddress (socket: Socket): string {
  const address = socket.remoteAddress ?? 'unknown'
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}
