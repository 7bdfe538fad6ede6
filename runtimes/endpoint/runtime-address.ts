/**
 * Where a runtime listens: a local llama-server on a Unix socket (with a nominal origin) or a loopback port, or a
 * remote server (an upstream) at an http(s) URL, maybe under a path.
 */
export interface RuntimeAddress {
  /**
   * `http://127.0.0.1:<port>`, or `http://localhost` when `socketPath` is set; for an upstream,
   * `http(s)://host[:port][/path]` without a trailing slash: every request's path goes under `/path`.
   */
  readonly baseUrl: string
  /** The Unix socket to connect to, or null for TCP. */
  readonly socketPath: string | null
}

/** How to reach an address over TCP: what undici and the stream relay connect to, and what goes before each path. */
export interface AddressTarget {
  /** `http(s)://host[:port]`: undici's Pool takes the origin only. */
  origin: string
  /** The base URL's path without its trailing slash, put before every request's path; '' for none. */
  prefix: string
  tls: boolean
  /** The host to connect to, without an IPv6 literal's brackets. */
  host: string
  port: number
  /** The Host header's value. */
  hostHeader: string
}

// Asked for on every relayed stream; an address does not change (a runtime that moves is a new endpoint).
const TARGETS = new WeakMap<RuntimeAddress, AddressTarget>()

export function addressTarget (address: RuntimeAddress): AddressTarget {
  let target = TARGETS.get(address)
  if (target === undefined) TARGETS.set(address, target = parsedTarget(address))
  return target
}

function parsedTarget (address: RuntimeAddress): AddressTarget {
  const url = new URL(address.baseUrl)
  const tls = url.protocol === 'https:'
  return {
    origin: url.origin,
    prefix: url.pathname.replace(/\/+$/, ''),
    tls,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (tls ? 443 : 80) : Number(url.port),
    hostHeader: url.host,
  }
}
