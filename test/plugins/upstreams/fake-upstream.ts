import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Test } from 'tap'
import { resolveConfig } from '../../../core/platform/config.js'
import type { UpstreamConfig } from '../../../plugins/upstreams/upstream-config.js'

/** One request a stand-in upstream received. */
export interface Received { method: string, url: string, authorization: string | null, body: string }

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>`. */
  origin: string
  port: number
  received: Received[]
  /** How many connections it was sent requests on. */
  connections(): number
  /** Stops listening and drops its connections: the upstream is down. */
  close(): Promise<void>
}

/**
 * A stand-in upstream on a loopback port: a node:http server that records what it was sent (the Authorization
 * header, the body) and answers as `handle` says. `port` reuses a port (an upstream coming back).
 */
export async function fakeUpstream (t: Test, handle: (req: Received, res: ServerResponse) => void, port = 0): Promise<FakeUpstream> {
  const received: Received[] = []
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization ?? null, body: Buffer.concat(chunks).toString('utf8') }
      received.push(seen)
      handle(seen, res)
    })
  })
  let connections = 0
  server.on('connection', () => { connections++ })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  let closed = false
  const close = (): Promise<void> => {
    if (closed) return Promise.resolve()
    closed = true
    return new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  }
  t.teardown(close)
  const bound = (server.address() as { port: number }).port
  return { origin: `http://127.0.0.1:${bound}`, port: bound, received, connections: () => connections, close }
}

/** Answers with `status` and `body` as JSON. */
export function json (res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

/** What is read of an upstream's answers by default (config.yaml's limits.upstream_*). */
export const UPSTREAM_LIMITS = resolveConfig([]).limits.upstream

/** An upstream's config with the defaults config.ts gives. */
export function upstream (fields: Pick<UpstreamConfig, 'url' | 'kind'> & Partial<UpstreamConfig>): UpstreamConfig {
  return { name: 'box', key: null, models: [], prefix: '', maxConcurrent: 4, limits: UPSTREAM_LIMITS, ...fields }
}
