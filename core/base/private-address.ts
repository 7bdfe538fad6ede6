import { lookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import type { Agent } from 'undici'
import { undici } from './lazy-require.js'

/**
 * Addresses a URL someone else chose (an image URL, a hub's redirect) may not make the gateway reach: loopback,
 * private networks (RFC 1918, IPv6 ULA), link-local (the cloud metadata service at 169.254.169.254), carrier-grade
 * NAT, multicast and the unspecified ones. Reaching one would have the server probe its own network.
 */
const PRIVATE = new BlockList()
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 3]] as const) PRIVATE.addSubnet(net, bits, 'ipv4')
// ::/96 holds :: and ::1 and the old IPv4-compatible form (::127.0.0.1); 64:ff9b::/96 is NAT64's way to any IPv4.
for (const [net, bits] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) PRIVATE.addSubnet(net, bits, 'ipv6')

/** Whether `address` (v4, v6, or v4 mapped into v6) is one such address; anything not an address counts as one. */
export function isPrivateAddress (address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (mapped !== undefined) return PRIVATE.check(mapped, 'ipv4')
  const family = isIP(address)
  return family === 0 || PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Whether a URL's host is written as a private address. Connecting to an address literal asks no DNS, so the
 * agent's lookup never sees it: this is checked on the URL before the connection.
 */
export function isPrivateLiteral (url: URL): boolean {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  return isIP(host) !== 0 && isPrivateAddress(host)
}

/** A connection refused because its host resolved to a private address. */
export class PrivateAddressError extends Error {
  constructor (readonly host: string, readonly address: string) {
    super(`${host} resolves to ${address}, a private address`)
    this.name = 'PrivateAddressError'
  }
}

/** The PrivateAddressError behind `err`, as undici's request throws it or fetch wraps it in its cause. */
export function privateAddressErrorOf (err: unknown): PrivateAddressError | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) if (e instanceof PrivateAddressError) return e
  return null
}

/** Fails a connection to a private address, whatever name led to it: checked on the addresses DNS gave, as connected. */
function publicLookup (hostname: string, options: { all?: boolean }, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err !== null) { callback(err, []); return }
    const refused = addresses.find((a) => isPrivateAddress(a.address))
    if (addresses.length === 0 || refused !== undefined) { callback(new PrivateAddressError(hostname, refused?.address ?? 'no address'), []); return }
    if (options.all === true) callback(null, addresses)
    else callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}

/** An undici Agent (its own pool) whose connections reach public addresses only; pair it with isPrivateLiteral. */
export function publicOnlyAgent (): Agent {
  return new (undici().Agent)({ connect: { lookup: publicLookup as never } })
}
