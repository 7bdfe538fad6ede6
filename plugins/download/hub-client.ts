import type { Readable } from 'node:stream'
import { undici } from '../../core/base/lazy-require.js'
import { gatedError, hubErrorFrom, HubError, type HubAnswer } from './hub-error.js'
import { HubRedirects, PrivateRedirectError } from './hub-redirects.js'
import { isRetryableStatus, MAX_ATTEMPTS, retryDelayMs, wait } from './retry.js'

/**
 * A file of a repository at a commit, as the tree endpoint lists it: `sha256` is the LFS object id (null for
 * small files kept in git), `gitOid` the git blob id, which identifies those small files.
 */
export interface HubFile { path: string, size: number, sha256: string | null, gitOid?: string | null }

/** A file download's answer: the status, headers, and the body as a Node stream (fewer, larger chunks than fetch). */
export interface FileAnswer extends HubAnswer { body: Readable }

export interface HubClientOptions {
  /** @default 'https://huggingface.co' */
  endpoint: string
  token: string | null
  /** Whether the hub may redirect to private addresses of other hosts (hub.allow_private_redirects). @default false */
  allowPrivateRedirects?: boolean
  /** @default globalThis.fetch */
  fetch?: typeof fetch
  /** Called before each wait for another try (a 408, 429 or 5xx, an unreachable hub). @default none */
  onRetry?: (reason: string) => void
}

/**
 * The hub's HTTP protocol (shared/spec/hub-protocol.md). The listing is @huggingface/hub's `modelInfo` and
 * `listFiles` (URL shapes, `Link` pages), given our own `fetch`: that is where the token is added (to the
 * hub's origin only), where 408/429/5xx and network errors are retried honouring the hub's `RateLimit` and
 * `Retry-After` (the library does not retry), and where a refusal becomes a HubError read from the hub's
 * `X-Error-Code` (the library's HubApiError keeps only the status and the body's words). The file download
 * is written by hand because the library has nothing for what a pull needs there: redirects followed one
 * by one so the token never reaches the CDN, `Range` to resume a partial file kept across restarts, and
 * the body as a stream the caller hashes as it writes (its `downloadFile` buffers a Blob; its cache
 * download restarts from zero). Every redirect, of a file or of the API, is held to HubRedirects' rules.
 */
export class HubClient {
  readonly endpoint: string
  private readonly origin: string
  private readonly fetch: typeof fetch
  private readonly redirects: HubRedirects

  constructor (private readonly options: HubClientOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, '')
    this.origin = new URL(this.endpoint).origin
    this.fetch = options.fetch ?? globalThis.fetch
    this.redirects = new HubRedirects(this.endpoint, options.allowPrivateRedirects ?? false)
  }

  /**
   * The commit the default branch points at. A gated repository is refused here when there is no token
   * (the hub lists it, then refuses every file): the message says to accept the licence and set HF_TOKEN.
   */
  async resolveCommit (repo: string, signal?: AbortSignal): Promise<string> {
    const { modelInfo } = await hubLibrary()
    const info = await modelInfo({ name: repo, hubUrl: this.endpoint, fetch: this.apiFetch(repo, signal), additionalFields: ['sha'] })
    if (info.gated && !this.options.token) throw gatedError(repo, this.endpoint, false)
    if (typeof info.sha !== 'string' || !/^[0-9a-f]{40}$/.test(info.sha)) throw new HubError(502, `the hub gave no commit for ${repo}`)
    return info.sha
  }

  /** Every file of the repository at `commit` (the library follows the tree's `Link` pages). */
  async listFiles (repo: string, commit: string, signal?: AbortSignal): Promise<HubFile[]> {
    const { listFiles } = await hubLibrary()
    const files: HubFile[] = []
    for await (const e of listFiles({ repo: { type: 'model', name: repo }, revision: commit, recursive: true, hubUrl: this.endpoint, fetch: this.apiFetch(repo, signal) })) {
      if (e.type !== 'file') continue
      // For an LFS file the git oid is the pointer's, not the content's: only the LFS SHA-256 identifies it.
      files.push({ path: e.path, size: e.size, sha256: e.lfs?.oid ?? null, gitOid: e.lfs ? null : (e.oid ?? null) })
    }
    return files
  }

  /** Where the hub serves a file of the repository at `commit` (it may redirect to a CDN). */
  resolveUrl (repo: string, commit: string, path: string): string {
    return `${this.endpoint}/${repo}/resolve/${commit}/${path.split('/').map(encodeURIComponent).join('/')}`
  }

  /**
   * Starts the download of a file, from `offset` on. Redirects are followed by hand so that the token goes
   * to the hub only, never to the CDN a redirect points at. Resolves with the body's response: 206 when the
   * range was honoured, 200 when the whole file comes (the caller starts over).
   */
  async openFile (repo: string, commit: string, path: string, offset: number, signal?: AbortSignal): Promise<FileAnswer> {
    const start = this.resolveUrl(repo, commit, path)
    for (let attempt = 1; ; attempt++) {
      let answer: FileAnswer
      let url = start
      try {
        for (let hops = 0; ; hops++) {
          const target = new URL(url)
          // identity: a compressed answer would have another length and make Range offsets meaningless (hub-protocol §2.5).
          const headers: Record<string, string> = { 'accept-encoding': 'identity' }
          if (offset > 0) headers.range = `bytes=${offset}-`
          if (this.options.token && target.origin === this.origin) headers.authorization = `Bearer ${this.options.token}`
          const dispatcher = this.redirects.dispatcherFor(target, path)
          const response = await undici().request(url, { method: 'GET', headers, signal, ...(dispatcher ? { dispatcher } : {}) })
            .catch((err: unknown) => { throw this.redirects.refusalOf(err, target, path) ?? err })
          answer = adapt(response.statusCode, response.headers, response.body)
          const location = answer.headers.get('location')
          if (answer.status >= 300 && answer.status < 400 && location && hops < 5) {
            discard(response.body)
            url = new URL(location, url).href
            continue
          }
          break
        }
      } catch (err) {
        if (signal?.aborted || attempt >= MAX_ATTEMPTS || err instanceof PrivateRedirectError) throw err
        this.options.onRetry?.((err as Error).message)
        await wait(retryDelayMs(attempt), signal)
        continue
      }
      if (answer!.status >= 200 && answer!.status < 300) return answer!
      if (isRetryableStatus(answer!.status) && attempt < MAX_ATTEMPTS) {
        discard(answer!.body)
        this.options.onRetry?.(`${path}: the hub answered ${answer!.status}`)
        await wait(retryDelayMs(attempt, answer!.headers), signal)
        continue
      }
      throw await hubErrorFrom(answer!, repo, this.endpoint, this.options.token !== null, path)
    }
  }

  /**
   * The `fetch` the library calls for `repo`: the token to the hub's origin only, redirects followed by hand
   * (HubRedirects' rules), retries with the hub's waits, and a non-OK final answer thrown as a HubError (so the
   * library's own error never forms).
   */
  private apiFetch (repo: string, signal?: AbortSignal): typeof fetch {
    return async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
      for (let attempt = 1; ; attempt++) {
        let response: Response
        try {
          response = await this.fetchFollowing(url, init, `the listing of ${repo}`, signal)
        } catch (err) {
          if (signal?.aborted || err instanceof PrivateRedirectError) throw err
          if (attempt >= MAX_ATTEMPTS) throw new HubError(502, `cannot reach the hub at ${this.endpoint}: ${(err as Error).message}`)
          this.options.onRetry?.((err as Error).message)
          await wait(retryDelayMs(attempt), signal)
          continue
        }
        if (response.ok) return response
        if (isRetryableStatus(response.status) && attempt < MAX_ATTEMPTS) {
          await response.body?.cancel()
          this.options.onRetry?.(`the hub answered ${response.status}`)
          await wait(retryDelayMs(attempt, response.headers), signal)
          continue
        }
        throw await hubErrorFrom(response, repo, this.endpoint, this.options.token !== null)
      }
    }
  }

  /** One API request, its redirects followed one by one: each hop gets the token only on the hub's origin. */
  private async fetchFollowing (start: string, init: RequestInit | undefined, what: string, signal?: AbortSignal): Promise<Response> {
    let url = start
    for (let hops = 0; ; hops++) {
      const target = new URL(url)
      const headers = new Headers(init?.headers)
      headers.set('accept', 'application/json')
      if (this.options.token && target.origin === this.origin) headers.set('authorization', `Bearer ${this.options.token}`)
      else headers.delete('authorization')
      const dispatcher = this.redirects.dispatcherFor(target, what)
      // `dispatcher` is undici's own option, which Node's fetch reads too.
      const response = await this.fetch(url, { ...init, headers, signal, redirect: 'manual', ...(dispatcher ? { dispatcher } : {}) } as RequestInit)
        .catch((err: unknown) => { throw this.redirects.refusalOf(err, target, what) ?? err })
      const location = response.headers.get('location')
      if (response.status < 300 || response.status >= 400 || location === null || hops >= 5) return response
      await response.body?.cancel()
      url = new URL(location, url).href
    }
  }
}

function adapt (status: number, headers: Record<string, string | string[] | undefined>, body: Readable & { text(): Promise<string> }): FileAnswer {
  return {
    status,
    headers: { get: (name) => { const v = headers[name.toLowerCase()]; return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v } },
    text: () => body.text(),
    body,
  }
}

/** Drops a body we will not read; undici reports a destroyed body as an error, which is expected here. */
export function discard (body: Readable): void {
  body.on('error', () => {})
  body.destroy()
}

/** @huggingface/hub, loaded at the first pull rather than with the server (a tenth of a second of a start's CPU). */
function hubLibrary (): Promise<typeof import('@huggingface/hub')> {
  return import('@huggingface/hub')
}
