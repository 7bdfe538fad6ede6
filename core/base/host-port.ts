import { BlockList, isIP } from 'node:net'

/** A `host:port` address (an RPC worker's, as llama-server's `--rpc` takes it). */
export interface HostPort { host: string, port: number }

/** `10.0.0.5:50052`, `[fd00::5]:50052`, `worker-0.rpc:50052`; null when it is none of these. */
export function parseHostPort (text: string): HostPort | null {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):(\d{1,5})$/.exec(text.trim())
  if (!match) return null
  const port = Number(match[3])
  if (port < 1 || port > 65535) return null
  return { host: match[1] ?? match[2]!, port }
}

/** As llama-server's `--rpc` wants it (IPv6 in brackets). */
export function formatHostPort (endpoint: HostPort): string {
  return `${isIP(endpoint.host) === 6 ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`
}

// The RPC protocol has no authentication and llama.cpp calls it unsafe on open networks: an address anyone may
// route to is refused unless the admin says otherwise. Private, shared (CGNAT: Tailscale) and link-local ranges
// are where a worker belongs (a private network, a VPN).
const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')
const PRIVATE = new BlockList()
for (const [net, bits] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['169.254.0.0', 16]] as const) PRIVATE.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [['fc00::', 7], ['fe80::', 10]] as const) PRIVATE.addSubnet(net, bits, 'ipv6')

export type AddressKind = 'loopback' | 'private' | 'public' | 'name'

/** Whether an address is this machine, a private network's, public, or a name (unknown until resolved). */
export function addressKind (host: string): AddressKind {
  const family = isIP(host)
  if (family === 0) return host === 'localhost' ? 'loopback' : 'name'
  const type = family === 4 ? 'ipv4' : 'ipv6'
  // An IPv4 address written as IPv6 (::ffff:1.2.3.4) is the IPv4 one.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host)
  if (mapped) return addressKind(mapped[1]!)
  if (LOOPBACK.check(host, type)) return 'loopback'
  if (PRIVATE.check(host, type)) return 'private'
  return 'public'
}

/**
 * Whether a host (an address to listen on, a Host header's name) can only mean this machine: 127.0.0.0/8 and ::1 in
 * any spelling (in brackets, IPv4-mapped), localhost and the names under .localhost (RFC 6761).
 */
export function isLoopbackHost (host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true
  const family = isIP(bare)
  // Every request's Host header comes here: an IPv4 literal (dotted decimal, as isIP takes it) is decided by its first
  // octet, without the BlockList, whose check builds a SocketAddress each time (~50 µs).
  if (family === 4) return bare.startsWith('127.')
  return family === 6 && addressKind(bare) === 'loopback'
}
