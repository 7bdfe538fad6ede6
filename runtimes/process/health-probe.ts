import { connect } from 'node:net'

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/

/** Where a llama-server listens: its Unix socket, or a loopback port. */
export type ProbeTarget = { socketPath: string } | { port: number }

/**
 * `GET /health` on a fresh connection; resolves with the status code as soon as the status line is in.
 * Rejects when nothing listens yet, or no status line came within `timeoutMs`.
 *
 * A bare socket rather than an HTTP client: the readiness check sits on the cold start's critical path, where
 * a fresh HTTP client's first request costs several times this one (docs/benchmarks.md).
 */
export function healthStatus (target: ProbeTarget, timeoutMs: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const socket = 'socketPath' in target ? connect({ path: target.socketPath }) : connect({ host: '127.0.0.1', port: target.port })
    let seen = ''
    const done = (status: number | Error): void => {
      socket.destroy()
      clearTimeout(timer)
      if (typeof status === 'number') resolve(status); else reject(status)
    }
    const timer = setTimeout(() => done(new Error(`no answer to GET /health within ${timeoutMs} ms`)), timeoutMs)
    socket.setNoDelay(true)
    socket.once('error', done)
    socket.once('close', () => done(new Error('the connection closed before a status line')))
    socket.on('data', (bytes: Buffer) => {
      seen += bytes.toString('latin1')
      const end = seen.indexOf('\r\n')
      if (end < 0 && seen.length < 1024) return
      const status = STATUS_LINE.exec(seen)
      done(status ? Number(status[1]) : new Error(`not an HTTP answer: ${JSON.stringify(seen.slice(0, 80))}`))
    })
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
  })
}
