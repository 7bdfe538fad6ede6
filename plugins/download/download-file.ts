import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { GatewayError } from '../../core/errors.js'
import { discard, type HubClient, type HubFile } from './hub-client.js'
import { MAX_ATTEMPTS, retryDelayMs, wait } from './retry.js'

/** How long a download may receive nothing before it is retried. */
const STALL_MS = 30_000

export interface FileProgress { file: string, total: number, completed: number }

/** What the bytes of a `.partial` file are expected to become; a sidecar that outlives the process. */
interface PartialInfo { url: string, repository: string, commit: string, path: string, size: number, sha256: string | null }

export interface DownloadFileOptions {
  client: HubClient
  repo: string
  commit: string
  file: HubFile
  /** The model's folder: the file lands at `<dir>/<path>`. */
  dir: string
  signal?: AbortSignal
  onProgress: (progress: FileProgress) => void
}

async function hashExisting (path: string, bytes: number, hashes: Hash[]): Promise<void> {
  if (bytes === 0) return
  for await (const chunk of createReadStream(path, { start: 0, end: bytes - 1, highWaterMark: 1 << 20 })) for (const h of hashes) h.update(chunk as Buffer)
}

async function partialInfoMatches (path: string, expected: PartialInfo): Promise<boolean> {
  try {
    const info = JSON.parse(await readFile(path, 'utf8')) as PartialInfo
    // Same content: the same SHA-256, or for small non-LFS files (no SHA-256 listed) the same commit.
    return info.size === expected.size && info.sha256 === expected.sha256 && info.path === expected.path &&
      (expected.sha256 !== null || info.commit === expected.commit)
  } catch {
    return false
  }
}

/**
 * Downloads one file into `<dir>/<path>.partial`, resuming what an earlier try left there (also after a
 * restart: the sidecar `.partial.json` says what the bytes are for), hashing as the bytes stream by, and
 * renames it into place only when its size and SHA-256 are right. A broken connection resumes with Range.
 */
export async function downloadFile (opts: DownloadFileOptions): Promise<void> {
  const { client, repo, commit, file, dir, signal, onProgress } = opts
  const target = join(dir, file.path)
  const partial = `${target}.partial`
  const sidecar = `${partial}.json`
  const expected: PartialInfo = { url: client.resolveUrl(repo, commit, file.path), repository: repo, commit, path: file.path, size: file.size, sha256: file.sha256 }
  await mkdir(dirname(target), { recursive: true })
  let offset = 0
  if (await partialInfoMatches(sidecar, expected)) {
    offset = Math.min(await stat(partial).then((s) => s.size, () => 0), file.size)
  } else {
    await rm(partial, { force: true })
    await writeFile(sidecar, JSON.stringify(expected))
  }
  const hash = createHash('sha256')
  // A small file kept in git has no SHA-256 on the hub, but its git blob id (SHA-1 of "blob <size>\0" + bytes) checks it as well.
  const blob = file.sha256 === null && file.gitOid ? createHash('sha1').update(`blob ${file.size}\0`) : null
  const hashes = blob ? [hash, blob] : [hash]
  await hashExisting(partial, offset, hashes)
  onProgress({ file: file.path, total: file.size, completed: offset })
  for (let attempt = 1; offset < file.size || file.size === 0; attempt++) {
    // A connection that stops sending without closing is given up after a while and resumed.
    const stall = new AbortController()
    let stallTimer = setTimeout(() => stall.abort(new Error(`no data for ${STALL_MS / 1000} s`)), STALL_MS).unref()
    const attemptSignal = signal ? AbortSignal.any([signal, stall.signal]) : stall.signal
    try {
      const response = await client.openFile(repo, commit, file.path, offset, attemptSignal)
      if (offset > 0 && response.status !== 206) {
        // The server ignored the range and sends the whole file: start over.
        discard(response.body)
        await rm(partial, { force: true })
        return await restart(opts)
      }
      // A large buffer: fewer, bigger writes while the network hands over 64 KiB at a time.
      const out = createWriteStream(partial, { flags: offset > 0 ? 'a' : 'w', highWaterMark: 4 << 20 })
      try {
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          clearTimeout(stallTimer)
          stallTimer = setTimeout(() => stall.abort(new Error(`no data for ${STALL_MS / 1000} s`)), STALL_MS).unref()
          hash.update(chunk)
          blob?.update(chunk)
          offset += chunk.length
          if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
          onProgress({ file: file.path, total: file.size, completed: Math.min(offset, file.size) })
        }
      } finally {
        await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
      }
      if (file.size === 0) { clearTimeout(stallTimer); break }
      if (offset < file.size) throw new Error(`connection closed at ${offset} of ${file.size} bytes`)
    } catch (err) {
      clearTimeout(stallTimer)
      if (signal?.aborted) throw signal.reason ?? err
      if (stall.signal.aborted && attempt >= MAX_ATTEMPTS) throw new GatewayError(504, `the download of ${file.path} stalled (${(stall.signal.reason as Error).message}); pull again to resume`, { code: 'stalled' })
      if (err instanceof GatewayError || attempt >= MAX_ATTEMPTS) throw err
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new GatewayError(507, `the disk is full while writing ${file.path}: free some space and pull again (the partial download is kept)`, { code: 'disk_full' })
      await wait(retryDelayMs(attempt), signal)
    }
    clearTimeout(stallTimer)
  }
  if (offset !== file.size) {
    await rm(partial, { force: true })
    throw new GatewayError(502, `${file.path} came with ${offset} bytes where the hub lists ${file.size}; the download was discarded`, { code: 'size_mismatch' })
  }
  const digest = hash.digest('hex')
  const blobId = blob?.digest('hex')
  if (blobId && blobId !== file.gitOid) {
    await rm(partial, { force: true })
    await rm(sidecar, { force: true })
    throw new GatewayError(502, `${file.path} does not match its git blob id (expected ${file.gitOid}, got ${blobId}); the download was discarded, pull again`, { code: 'checksum_mismatch' })
  }
  if (file.sha256 && digest !== file.sha256) {
    await rm(partial, { force: true })
    await rm(sidecar, { force: true })
    throw new GatewayError(502, `${file.path} does not match its SHA-256 (expected ${file.sha256}, got ${digest}); the download was discarded, pull again`, { code: 'checksum_mismatch' })
  }
  await rename(partial, target)
  await rm(sidecar, { force: true })
}

async function restart (opts: DownloadFileOptions): Promise<void> {
  const sidecar = `${join(opts.dir, opts.file.path)}.partial.json`
  await rm(sidecar, { force: true })
  return downloadFile(opts)
}
