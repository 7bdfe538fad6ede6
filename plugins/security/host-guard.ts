import { isIP } from 'node:net'

/** True for names and addresses that can only mean this machine. */
export function isLoopbackHost (host: string): boolean {
  const name = stripBrackets(host).toLowerCase()
  if (name === 'localhost' || name.endsWith('.localhost')) return true
  if (isIP(name) === 4) return name.startsWith('127.')
  if (isIP(name) === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1'
  return false
}

/** The host name of a `Host` header, without its port. */
export function hostOfHeader (header: string): string {
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']'))
  const colon = header.lastIndexOf(':')
  return colon === -1 ? header : header.slice(0, colon)
}

/** Shell-style `*` patterns, as used in `cors.origins` and `allowed_hosts`. */
export function matchesPattern (value: string, pattern: string): boolean {
  if (!pattern.includes('*')) return value.toLowerCase() === pattern.toLowerCase()
  const regex = new RegExp('^' + pattern.split('*').map(escapeRegExp).join('.*') + '$', 'i')
  return regex.test(value)
}

function stripBrackets (host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

function escapeRegExp (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
