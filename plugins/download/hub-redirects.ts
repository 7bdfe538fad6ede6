import type { Dispatcher } from 'undici'
import { GatewayError } from '../../core/base/errors.js'
import { isPrivateLiteral, privateAddressErrorOf, publicOnlyAgent } from '../../core/base/private-address.js'

/** A hub redirect that was not followed: to a private address of a host other than the hub's. */
export class PrivateRedirectError extends GatewayError {
  constructor (what: string, url: URL, address: string) {
    const named = bare(url.hostname) === address ? url.host : `${url.host} (${address})`
    super(502, `the hub redirected ${what} to ${named}, a private address, and it was not followed; set hub.allow_private_redirects: true if your mirror serves from your network`, { code: 'private_redirect' })
  }
}

// One pool for every client: each connection is checked as it is made, so a kept one stays as good as when checked.
// Made at the first redirect that needs it.
let publicOnly: Dispatcher | null = null

/**
 * Where the hub may send the gateway. Anywhere on the configured endpoint's own host name (any port: a LAN
 * mirror serving its own files); elsewhere, public addresses only, judged on what DNS gives as the connection
 * is made (a public-looking name for 127.0.0.1 is refused too), unless `allowPrivate`. Otherwise a hub, a
 * compromised mirror or anything on the way could make the gateway fetch from its loopback, its LAN or the
 * cloud metadata service.
 */
export class HubRedirects {
  private readonly host: string

  constructor (endpoint: string, private readonly allowPrivate: boolean) {
    this.host = new URL(endpoint).hostname
  }

  /**
   * The dispatcher for a request to `url` (undefined: the default one).
   * @throws PrivateRedirectError when `url` names a private address outright (no DNS is asked for those)
   */
  dispatcherFor (url: URL, what: string): Dispatcher | undefined {
    if (this.allowPrivate || url.hostname === this.host) return undefined
    if (isPrivateLiteral(url)) throw new PrivateRedirectError(what, url, bare(url.hostname))
    publicOnly ??= publicOnlyAgent()
    return publicOnly
  }

  /** The refusal `err` stands for when its connection to `url` was refused for its address, else null. */
  refusalOf (err: unknown, url: URL, what: string): PrivateRedirectError | null {
    const refused = privateAddressErrorOf(err)
    return refused === null ? null : new PrivateRedirectError(what, url, refused.address)
  }
}

/** A URL's host name without the brackets of an IPv6 address. */
function bare (hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1')
}
