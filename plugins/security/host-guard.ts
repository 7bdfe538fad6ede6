import { isLoopbackHost } from '../../core/base/host-port.js'

export { isLoopbackHost }

/** The host name of a `Host` header, without its port. */
export function hostOfHeader (header: string): string {
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']'))
  const colon = header.lastIndexOf(':')
  return colon === -1 ? header : header.slice(0, colon)
}

/**
 * The host name a request's `Host` header names when a listener bound to `bound` must refuse it, else null: a
 * page on another site can make a browser send requests to 127.0.0.1 under its own host name (DNS rebinding), so a
 * loopback listener answers only to loopback names and the ones an admin allowed.
 */
export function foreignHost (bound: string, hostHeader: string | undefined, allowedHosts: readonly string[]): string | null {
  if (!hostHeader || !isLoopbackHost(bound)) return null
  const name = hostOfHeader(hostHeader)
  return isLoopbackHost(name) || name === bound || allowedHosts.some((p) => matchesPattern(name, p)) ? null : name
}

/** Shell-style `*` patterns, as used in `cors.origins` and `allowed_hosts`. */
export function matchesPattern (value: string, pattern: string): boolean {
  if (!pattern.includes('*')) return value.toLowerCase() === pattern.toLowerCase()
  const regex = new RegExp('^' + pattern.split('*').map(escapeRegExp).join('.*') + '$', 'i')
  return regex.test(value)
}

function escapeRegExp (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
