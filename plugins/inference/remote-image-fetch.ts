import { lookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { Agent, fetch, type Response } from 'undici'
import { BadRequestError } from '../../core/errors.js'

const FETCH_TIMEOUT_MS = 15_000
const MAX_REDIRECTS = 3

/**
 * Addresses an image URL may not reach: loopback, private networks, link-local (the cloud metadata service at
 * 169.254.169.254), carrier-grade NAT, multicast and the unspecified ones. A client naming one would have the
 * server probe its own network for it.
 */
const PRIVATE = new BlockList()
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 3]] as const) PRIVATE.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [['::', 127], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) PRIVATE.addSubnet(net, bits, 'ipv6')

/** Whether `address` (v4, v6, or v4 mapped into v6) is one an image URL may not reach. */
export function isPrivateAddress (address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (mapped !== undefined) return PRIVATE.check(mapped, 'ipv4')
  const family = isIP(address)
  return family === 0 || PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/** Fails a connection to a private address, whatever name led to it: checked on the addresses DNS gave, as connected. */
function publicLookup (hostname: string, options: { all?: boolean }, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err !== null) { callback(err, []); return }
    if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) { callback(new Error('a private address'), []); return }
    if (options.all === true) callback(null, addresses)
    else callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}

const PUBLIC_ONLY = new Agent({ connect: { lookup: publicLookup as never } })
const ANY = new Agent()

/**
 * GETs an image URL for the gateway, following at most 3 redirects, each hop held to the same rules: public
 * addresses only unless `allowPrivate`; and what went wrong on the way (a refused address, no such host, a closed
 * port, a timeout) told in the same words, so that the answer says nothing of the network behind the server.
 * @throws BadRequestError `image_fetch_failed`, or the signal's reason
 */
export async function fetchRemote (url: string, what: string, allowPrivate: boolean, signal: AbortSignal): Promise<Response> {
  const unreachable = (): BadRequestError => new BadRequestError(`could not fetch ${what} (${url}): it could not be reached`, 'image_fetch_failed')
  let target = url
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const host = new URL(target).hostname.replace(/^\[(.*)\]$/, '$1')
    if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) throw unreachable()
    let response: Response
    try {
      response = await fetch(target, { redirect: 'manual', dispatcher: allowPrivate ? ANY : PUBLIC_ONLY, signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]) })
    } catch (err) {
      if (signal.aborted) throw signal.reason
      throw unreachable()
    }
    const location = response.headers.get('location')
    if (response.status < 300 || response.status >= 400 || location === null) return response
    await response.body?.cancel().catch(() => {})
    target = new URL(location, target).href
    if (!/^https?:$/.test(new URL(target).protocol)) throw unreachable()
  }
  throw new BadRequestError(`could not fetch ${what} (${url}): more than ${MAX_REDIRECTS} redirects`, 'image_fetch_failed')
}
