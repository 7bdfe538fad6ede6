import type { Agent, Response } from 'undici'
import { BadRequestError } from '../../core/base/errors.js'
import { undici } from '../../core/base/lazy-require.js'
import { isPrivateLiteral, publicOnlyAgent } from '../../core/base/private-address.js'

const FETCH_TIMEOUT_MS = 15_000
const MAX_REDIRECTS = 3

// A client naming a private address would have the server probe its own network for it. Made at the first fetch.
let agents: { publicOnly: Agent, any: Agent } | null = null

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
    if (!allowPrivate && isPrivateLiteral(new URL(target))) throw unreachable()
    let response: Response
    try {
      agents ??= { publicOnly: publicOnlyAgent(), any: new (undici().Agent)() }
      response = await undici().fetch(target, { redirect: 'manual', dispatcher: allowPrivate ? agents.any : agents.publicOnly, signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]) })
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
