import type { Socket } from 'node:net'

/** How long an idle kept connection waits for the next stream: under the 5 s that uvicorn (vLLM) and Node keep theirs. */
const IDLE_MS = 4000

/**
 * Connections kept between relayed streams to one upstream, which, unlike llama-server, keeps a connection alive
 * after a streamed answer: the next stream skips the connect (and, over https, the TLS handshake, a few round trips
 * to a remote engine). A socket is given back only when its answer ended cleanly (stream-relay.ts decides), and one
 * closed by the upstream while idle is dropped.
 */
export class RelaySockets {
  private readonly idle: Socket[] = []
  private closed = false

  /** An idle connection, or null: the caller connects. */
  take (): Socket | null {
    for (let socket = this.idle.pop(); socket !== undefined; socket = this.idle.pop()) {
      this.forget(socket)
      if (!socket.destroyed && socket.readyState === 'open') return socket
      socket.destroy()
    }
    return null
  }

  /** Keeps a connection whose last answer ended cleanly, with nothing of its own listening on it. */
  give (socket: Socket): void {
    if (this.closed || socket.destroyed) { socket.destroy(); return }
    const drop = (): void => {
      const at = this.idle.indexOf(socket)
      if (at !== -1) this.idle.splice(at, 1)
      socket.destroy()
    }
    socket.setTimeout(IDLE_MS)
    socket.once('timeout', drop)
    // Bytes nobody asked for, or the upstream hanging up: not a connection to send the next stream on.
    socket.once('data', drop)
    socket.once('end', drop)
    socket.once('error', drop)
    socket.once('close', drop)
    IDLE_HANDLERS.set(socket, drop)
    this.idle.push(socket)
  }

  /** Closes every idle connection; those given back later are closed at once. */
  close (): void {
    this.closed = true
    for (const socket of this.idle.splice(0)) { this.forget(socket); socket.destroy() }
  }

  get size (): number { return this.idle.length }

  private forget (socket: Socket): void {
    const drop = IDLE_HANDLERS.get(socket)
    if (drop === undefined) return
    IDLE_HANDLERS.delete(socket)
    socket.setTimeout(0)
    for (const event of ['timeout', 'data', 'end', 'error', 'close']) socket.removeListener(event, drop)
  }
}

const IDLE_HANDLERS = new WeakMap<Socket, () => void>()
