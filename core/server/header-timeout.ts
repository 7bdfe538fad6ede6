import type { ServerOptions } from 'node:http'

/**
 * Node's HTTP server settings that cut a connection whose request head has not arrived whole `ms` after the
 * connection opened (a silent one too), or after the head's first byte on a kept-alive one: a 408, then closed.
 * Node looks on an interval (30 s by default, which let a slow head live ~65 s): here a fraction of the limit.
 * The whole request is not timed here (requestTimeout 0): a model upload takes as long as it takes, and every
 * other body is held to limits.body_timeout (core/server/body-timeout.ts).
 */
export function headerTimeoutOptions (ms: number): ServerOptions {
  const headersTimeout = Math.ceil(ms)
  return {
    headersTimeout,
    requestTimeout: 0,
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.round(headersTimeout / 4))),
  }
}
