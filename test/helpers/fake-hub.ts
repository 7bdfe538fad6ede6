import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A file of a fake repository; LFS files are served from the CDN with their SHA-256. */
export interface FakeFile { path: string, content: Buffer, lfs?: boolean }
export interface FakeRepo {
  files: FakeFile[]
  gated?: boolean
  /** For a gated repository: the tokens whose account accepted its licence (default: every valid token). */
  approved?: string[]
  private?: boolean
  commit?: string
}

/** Faults to switch on per test. */
export interface FakeHubFaults {
  /** CDN: close the connection after this many body bytes, this many times. */
  dropAfterBytes?: number
  drops?: number
  /** CDN: send this many bytes, then stall until the client goes away. */
  stallAfterBytes?: number
  /** Stall only the files of these SHA-256s (default: every file). */
  stallShas?: Set<string>
  /** Hub: answer the next N requests 503 with `Retry-After: 0`. */
  serverErrors?: number
  /** Hub: send non-LFS files through a relative 307 to /api/resolve-cache/... first, as the real hub does since 2025. */
  resolveCache?: boolean
  /** CDN: send at most this many bytes a second (a tenth every 100 ms), so that a download takes a while. */
  bytesPerSecond?: number
  /** CDN: answer ranges with the whole file (200). */
  ignoreRange?: boolean
  /** Hub: answer the next N requests 429 with RateLimit headers. */
  rateLimited?: number
  /** CDN: send this many bytes more than the file has (a hub that lists 20 bytes and sends 100 MB). */
  oversendBytes?: number
  /** CDN: serve these SHA-256s with wrong bytes (same length). */
  corrupt?: Set<string>
  /** CDN: answer 400 to any request carrying Authorization. */
  rejectAuthOnCdn?: boolean
  /** Tree entries per page. */
  pageSize?: number
  /**
   * Hub: the host its redirects name the CDN by, with the CDN's port (default 127.0.0.1, the hub's own host and where
   * the CDN listens): `localhost` is loopback under another name, `169.254.169.254` the cloud metadata address.
   */
  cdnHost?: string
  /** Extra tree entries, listed but not served (to test path checks). */
  extraTreeEntries?: Array<{ type: string, path: string, size: number, oid: string }>
}

/**
 * A loopback Hugging Face hub (shared/spec/hub-protocol.md §8): the API (revision, tree with Link pages),
 * /resolve/ with 302 to a second server playing the CDN (Range, its own ETag, no hub headers), the hub's
 * error headers, gated and private repositories, rate limiting, and fault switches.
 */
export class FakeHub {
  readonly repos = new Map<string, FakeRepo>()
  readonly tokens = new Set<string>()
  /** Renamed repositories, old id → new id: answered with a relative 307, as the hub does. */
  readonly renames = new Map<string, string>()
  /** Authorization headers the hub itself received (it may see the token; the CDN may not). */
  readonly hubAuthorizations: string[] = []
  faults: FakeHubFaults = {}
  /** What the CDN saw: every request's path, Authorization headers, bytes sent per SHA-256, Range headers. */
  readonly cdnRequests: string[] = []
  readonly cdnAuthorizations: string[] = []
  readonly cdnBytes = new Map<string, number>()
  readonly cdnRanges: string[] = []
  readonly hubRequests: string[] = []
  private hub!: Server
  private cdn!: Server
  url = ''
  private cdnUrl = ''
  private readonly bySha = new Map<string, FakeFile>()

  /** `keepAliveMs`: how long an idle client connection stays open (Node's default, 5 s, unless given). */
  static async start (options: { keepAliveMs?: number } = {}): Promise<FakeHub> {
    const hub = new FakeHub()
    hub.hub = createServer((req, res) => hub.onHub(req, res))
    hub.cdn = createServer((req, res) => hub.onCdn(req, res))
    for (const server of [hub.hub, hub.cdn]) {
      if (options.keepAliveMs !== undefined) server.keepAliveTimeout = options.keepAliveMs
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    }
    hub.url = `http://127.0.0.1:${(hub.hub.address() as AddressInfo).port}`
    hub.cdnUrl = `http://127.0.0.1:${(hub.cdn.address() as AddressInfo).port}`
    return hub
  }

  addRepo (id: string, repo: FakeRepo): void {
    repo.commit ??= createHash('sha1').update(id + Math.random()).digest('hex')
    for (const f of repo.files) if (f.lfs !== false) this.bySha.set(sha256(f.content), f)
    this.repos.set(id, repo)
  }

  async close (): Promise<void> {
    for (const server of [this.hub, this.cdn]) { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) }
  }

  private authorized (req: IncomingMessage): boolean {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    return token !== undefined && this.tokens.has(token)
  }

  private error (res: ServerResponse, status: number, code: string | null, message: string, extra: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': randomBytes(6).toString('hex'), ...(code ? { 'x-error-code': code } : {}), 'x-error-message': message, ...extra })
    res.end(JSON.stringify({ error: message }))
  }

  private onHub (req: IncomingMessage, res: ServerResponse): void {
    this.hubRequests.push(req.url!)
    if (req.headers.authorization) this.hubAuthorizations.push(req.headers.authorization)
    if (this.faults.serverErrors && this.faults.serverErrors > 0) {
      this.faults.serverErrors--
      res.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' })
      res.end('{"error":"Service Unavailable"}')
      return
    }
    if (this.faults.rateLimited && this.faults.rateLimited > 0) {
      this.faults.rateLimited--
      res.writeHead(429, { ratelimit: '"api";r=0;t=1', 'ratelimit-policy': '"fixed window";"api";q=500;w=300', 'retry-after': '1', 'content-type': 'application/json' })
      res.end('{"error":"rate limited"}')
      return
    }
    const url = new URL(req.url!, this.url)
    for (const [from, to] of this.renames) {
      if (url.pathname.startsWith(`/${from}/`) || url.pathname.startsWith(`/api/models/${from}/`)) {
        const location = url.pathname.replace(`/${from}/`, `/${to}/`) + url.search
        res.writeHead(307, { location, 'content-type': 'text/plain' })
        res.end(`Temporary Redirect. Redirecting to ${location}`)
        return
      }
    }
    if (req.headers.authorization && !this.authorized(req)) return this.error(res, 401, null, 'Invalid credentials in Authorization header')
    const cached = /^\/api\/resolve-cache\/models\/([^/]+\/[^/]+)\/([0-9a-f]{40})\/(.+)$/.exec(url.pathname)
    if (cached) {
      const owner = this.repos.get(cached[1]!)
      if (owner && (owner.private || owner.gated) && !this.authorized(req)) return this.error(res, 401, 'RepoNotFound', 'Repository not found')
      const file = owner?.files.find((f) => f.path === decodeURIComponent(cached[3]!) && f.lfs === false)
      if (!file) return this.error(res, 404, 'EntryNotFound', 'not in the resolve cache')
      res.writeHead(200, { 'content-length': file.content.length, 'x-repo-commit': cached[2]!, etag: `"${gitOid(file.content)}"` })
      res.end(file.content)
      return
    }
    // /api/models/:id, /revision/:rev, /tree/:rev[/path], /refs; /:id/resolve/:rev/path.
    const api = /^\/api\/models\/([^/]+\/[^/]+)(?:\/revision\/([^/]+)|\/tree\/([^/]+)(?:\/(.+))?|\/(refs))?$/.exec(url.pathname)
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname)
    const id = api?.[1] ?? resolve?.[1]
    const repo = id ? this.repos.get(id) : undefined
    if (!id || !repo) return this.error(res, this.authorized(req) ? 404 : 401, 'RepoNotFound', 'Repository not found')
    if (repo.private && !this.authorized(req)) return this.error(res, 401, 'RepoNotFound', 'Repository not found')
    // A branch name, HEAD, or the 40-hex commit; anything else is an unknown revision.
    const revision = decodeURIComponent(api?.[2] ?? api?.[3] ?? resolve?.[2] ?? 'main')
    if (!['main', 'HEAD', repo.commit].includes(revision)) return this.error(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`)
    if (api?.[5]) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ branches: [{ name: 'main', ref: 'refs/heads/main', targetCommit: repo.commit }], tags: [], converts: [] }))
      return
    }
    if (api && !api[3]) {
      // Model info: the hub answers it for a gated repository too (its files are what is refused).
      const blobs = url.searchParams.get('blobs') === 'true'
      const siblings = repo.files.map((f) => blobs
        ? { rfilename: f.path, size: f.content.length, blobId: gitOid(f.content), ...(f.lfs !== false ? { lfs: { size: f.content.length, sha256: sha256(f.content), pointerSize: 134 } } : {}) }
        : { rfilename: f.path })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ _id: id, id, sha: repo.commit, private: !!repo.private, gated: repo.gated ? 'manual' : false, siblings }))
      return
    }
    if (repo.gated && !this.authorized(req)) return this.error(res, 401, 'GatedRepo', `Access to model ${id} is restricted. You must have access to it and be authenticated to access it. Please log in.`)
    if (repo.gated && repo.approved && !repo.approved.includes(req.headers.authorization!.slice('Bearer '.length))) {
      return this.error(res, 403, 'GatedRepo', `Access to model ${id} is restricted and you are not in the authorized list. Visit https://huggingface.co/${id} to ask for access.`)
    }
    if (api?.[3]) {
      const folder = api[4] ? `${decodeURIComponent(api[4])}/` : ''
      const entries = [...repo.files.map((f) => ({ type: 'file', oid: gitOid(f.content), size: f.content.length, path: f.path, ...(f.lfs !== false ? { lfs: { oid: sha256(f.content), size: f.content.length, pointerSize: 134 } } : {}) })), ...(this.faults.extraTreeEntries ?? [])]
        .filter((e) => e.path.startsWith(folder))
      if (folder && entries.length === 0) return this.error(res, 404, 'EntryNotFound', `${folder} does not exist`)
      const size = this.faults.pageSize ?? 1000
      const cursor = Number(url.searchParams.get('cursor') ?? 0)
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (cursor + size < entries.length) headers.link = `<${this.url}${url.pathname}?recursive=true&expand=false&cursor=${cursor + size}>; rel="next"`
      res.writeHead(200, headers)
      res.end(JSON.stringify(entries.slice(cursor, cursor + size)))
      return
    }
    const path = decodeURIComponent(resolve![3]!)
    const file = repo.files.find((f) => f.path === path)
    if (!file) return this.error(res, 404, 'EntryNotFound', `${path} does not exist`, { 'x-repo-commit': repo.commit! })
    if (file.lfs === false && this.faults.resolveCache) {
      const location = `/api/resolve-cache/models/${id}/${repo.commit}/${resolve![3]}?etag=%22${gitOid(file.content)}%22`
      res.writeHead(307, { location, 'x-repo-commit': repo.commit! })
      res.end()
      return
    }
    if (file.lfs === false) {
      res.writeHead(200, { 'content-length': file.content.length, 'x-repo-commit': repo.commit!, etag: `"${gitOid(file.content)}"` })
      res.end(file.content)
      return
    }
    const sha = sha256(file.content)
    const cdn = this.faults.cdnHost === undefined ? this.cdnUrl : `http://${this.faults.cdnHost}:${new URL(this.cdnUrl).port}`
    const body = `Found. Redirecting to ${cdn}/lfs/${sha}`
    res.writeHead(302, { location: `${cdn}/lfs/${sha}?Expires=1&Signature=x`, 'x-repo-commit': repo.commit!, 'x-linked-etag': `"${sha}"`, 'x-linked-size': String(file.content.length), 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }

  private onCdn (req: IncomingMessage, res: ServerResponse): void {
    this.cdnRequests.push(req.url!)
    if (req.headers.authorization) {
      this.cdnAuthorizations.push(req.headers.authorization)
      if (this.faults.rejectAuthOnCdn) { res.writeHead(400); res.end('Only one auth mechanism allowed'); return }
    }
    const sha = /^\/lfs\/([0-9a-f]{64})/.exec(req.url!)?.[1]
    const file = sha ? this.bySha.get(sha) : undefined
    if (!file) { res.writeHead(404); res.end(); return }
    let content = file.content
    if (this.faults.corrupt?.has(sha!)) content = Buffer.from(content.map((b) => b ^ 0xff))
    if (this.faults.oversendBytes !== undefined) content = Buffer.concat([content, Buffer.alloc(this.faults.oversendBytes, 0x41)])
    let start = 0
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    if (req.headers.range) this.cdnRanges.push(req.headers.range)
    const headers: Record<string, string | number> = { 'accept-ranges': 'bytes', etag: `"cdn-${sha!.slice(0, 16)}"` }
    if (range && !this.faults.ignoreRange) {
      start = Number(range[1])
      if (start >= content.length) { res.writeHead(416, { 'content-range': `bytes */${content.length}` }); res.end(); return }
      res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${content.length - 1}/${content.length}`, 'content-length': content.length - start })
    } else {
      res.writeHead(200, { ...headers, 'content-length': content.length })
    }
    let body = content.subarray(start)
    const count = (n: number): void => { this.cdnBytes.set(sha!, (this.cdnBytes.get(sha!) ?? 0) + n) }
    if (this.faults.stallAfterBytes !== undefined && (!this.faults.stallShas || this.faults.stallShas.has(sha!))) {
      const part = body.subarray(0, Math.max(0, this.faults.stallAfterBytes - start))
      count(part.length)
      res.write(part) // and never end: the client has to give up
      return
    }
    if (this.faults.dropAfterBytes !== undefined && (this.faults.drops ?? 1) > 0) {
      this.faults.drops = (this.faults.drops ?? 1) - 1
      body = body.subarray(0, this.faults.dropAfterBytes)
      count(body.length)
      res.write(body, () => res.destroy())
      return
    }
    if (this.faults.bytesPerSecond !== undefined) {
      throttle(res, body, () => this.faults.bytesPerSecond, count)
      return
    }
    count(body.length)
    res.end(body)
  }
}

/**
 * Sends `body` a slice every 100 ms until it is all sent or the client has gone. The rate is read on every slice:
 * a test that lifts the fault mid-download gets the rest at once instead of waiting out the old rate.
 */
function throttle (res: ServerResponse, body: Buffer, rate: () => number | undefined, count: (n: number) => void): void {
  let at = 0
  const timer = setInterval(() => {
    const bytesPerSecond = rate()
    const slice = bytesPerSecond === undefined ? body.length : Math.max(1, Math.round(bytesPerSecond / 10))
    const part = body.subarray(at, at + slice)
    at += part.length
    count(part.length)
    if (at >= body.length) {
      clearInterval(timer)
      res.end(part)
    } else {
      res.write(part)
    }
  }, 100)
  res.once('close', () => clearInterval(timer))
}

// Digests are computed once per content buffer: the hub answers listings and redirects many times, and a
// benchmark's 1 GiB file hashed on each of them would be timed against the pull it serves.
const gitOids = new WeakMap<Buffer, string>()
const sha256s = new WeakMap<Buffer, string>()

function memo (cache: WeakMap<Buffer, string>, content: Buffer, compute: () => string): string {
  let digest = cache.get(content)
  if (digest === undefined) cache.set(content, digest = compute())
  return digest
}

/** A git blob id, as the tree lists for every file (the ETag of a non-LFS file). */
export function gitOid (content: Buffer): string {
  return memo(gitOids, content, () => createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex'))
}

export function sha256 (content: Buffer): string {
  return memo(sha256s, content, () => createHash('sha256').update(content).digest('hex'))
}
