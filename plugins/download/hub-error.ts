import { GatewayError } from '../../core/base/errors.js'

/** A hub answer that ends a pull, with a message that tells a person what to do. */
export class HubError extends GatewayError {
  constructor (statusCode: number, message: string, readonly requestId: string | null = null) {
    super(statusCode, message, { code: 'hub_error' })
  }
}

/** The part of an HTTP answer the error mapping reads (a fetch Response, or undici's answer adapted). */
export interface HubAnswer { status: number, headers: { get(name: string): string | null }, text(): Promise<string> }

/** A gated repository: what to do depends on whether a token was sent (then its account lacks the approval). */
export function gatedError (repo: string, endpoint: string, authenticated: boolean, requestId: string | null = null): HubError {
  return new HubError(403, `${repo} is a gated repository: accept its licence at ${endpoint}/${repo}${authenticated ? ' with the account of your HF_TOKEN' : ' and set HF_TOKEN'}`, requestId)
}

/** Maps the hub's error headers (X-Error-Code, X-Error-Message) to a clear error for `<repo>`. */
export async function hubErrorFrom (response: HubAnswer, repo: string, endpoint: string, authenticated: boolean, path?: string): Promise<HubError> {
  const code = response.headers.get('x-error-code')
  const requestId = response.headers.get('x-request-id')
  let detail = response.headers.get('x-error-message') ?? ''
  try {
    const body = JSON.parse(await response.text()) as { error?: unknown }
    if (!detail && typeof body.error === 'string') detail = body.error
  } catch { /* no JSON body */ }
  const status = response.status
  if (code === 'GatedRepo') return gatedError(repo, endpoint, authenticated, requestId)
  if (code === 'EntryNotFound') return new HubError(404, `${path ?? 'a file'} was not found in ${repo} on ${endpoint}; the repository changed, pull again`, requestId)
  if (code === 'RevisionNotFound') return new HubError(404, `${repo} has no such revision on ${endpoint}${detail ? `: ${detail}` : ''}`, requestId)
  if (code === 'RepoNotFound' || status === 404 || (status === 401 && !/invalid credentials/i.test(detail))) {
    return new HubError(404, `repository ${repo} was not found on ${endpoint}${authenticated ? '' : ' (if it is private, set HF_TOKEN)'}`, requestId)
  }
  if (status === 401) return new HubError(401, `the hub refused HF_TOKEN: ${detail || 'invalid credentials'}`, requestId)
  if (status === 429) return new HubError(503, `the hub's rate limit was reached for ${repo}; try again later (setting HF_TOKEN raises the limit)`, requestId)
  return new HubError(502, `the hub answered ${status} for ${repo}${detail ? `: ${detail}` : ''}`, requestId)
}
