import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream, fdatasync } from 'node:fs'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { GatewayError } from '../../core/base/errors.js'
import { discard, type HubClient, type HubFile } from './hub-client.js'
import { PrivateRedirectError } from './hub-redirects.js'
import { MAX_ATTEMPTS, retryDelayMs, wait } from './retry.js'
import { hashFor, type StreamHash } from './stream-hash.js'

const SYNC_EVERY = 64 << 20

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
  /** Called with the size of each piece of the file received from the hub. */
  onBytes?: (count: number) => void
  /** Called before each wait for another try (a dropped connection, a stall). */
  onRetry?: (reason: string) => void
}

async function hashExisting (path: string, bytes: number, hash: StreamHash, blob: Hash | null): Promise<void> {
  if (bytes === 0) return
  for await (const chunk of createReadStream(path, { start: 0, end: bytes - 1, highWaterMark: 1 << 20 })) {
    blob?.update(chunk as Buffer)
    if (!hash.update(chunk as Buffer)) await hash.drained()
  }
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
  const hash = hashFor(file.size)
  try {
    return await download(opts, hash, offset)
  } finally {
    await hash.discard()
  }
}

/** The download proper, from `offset` (what a partial file already holds), hashing as it goes. */
async function download (opts: DownloadFileOptions, hash: StreamHash, offset: number): Promise<void> {
  const { client, repo, commit, file, dir, signal, onProgress } = opts
  const target = join(dir, file.path)
  const partial = `${target}.partial`
  const sidecar = `${partial}.json`
  // A small file kept in git has no SHA-256 on the hub, but its git blob id (SHA-1 of "blob <size>\0" + bytes) checks it as well.
  const blob = file.sha256 === null && file.gitOid ? createHash('sha1').update(`blob ${file.size}\0`) : null
  await hashExisting(partial, offset, hash, blob)
  onProgress({ file: file.path, total: file.size, completed: offset })
  for (let attempt = 1; offset < file.size || file.size === 0; attempt++) {
    // A connection that stops sending without closing is given up after a while and resumed. One timer,
    // pushed back on each chunk (refresh), not one per chunk: a 1 GiB file comes in ~16,000 chunks.
    const stall = new AbortController()
    const stallTimer = setTimeout(() => stall.abort(new Error(`no data for ${STALL_MS / 1000} s`)), STALL_MS).unref()
    const attemptSignal = signal ? AbortSignal.any([signal, stall.signal]) : stall.signal
    try {
      const response = await client.openFile(repo, commit, file.path, offset, attemptSignal)
      if (offset > 0 && response.status !== 206) {
        // The server ignored the range and sends the whole file: start over.
        discard(response.body)
        clearTimeout(stallTimer)
        await rm(partial, { force: true })
        return await restart(opts)
      }
      // A large buffer: fewer, bigger writes while the network hands over 64 KiB at a time.
      const out = createWriteStream(partial, { flags: offset > 0 ? 'a' : 'w', highWaterMark: 4 << 20 })
      // The store syncs every file to disk before its manifest says it is whole. Syncing as the bytes come,
      // every 64 MiB and in the background, leaves that final sync almost nothing to do (1 GiB: ~0.5 s less).
      let unsynced = 0
      let overrun = false
      let syncing: Promise<void> | null = null
      const syncBehind = (): void => {
        const fd = (out as unknown as { fd?: number | null }).fd
        if (syncing !== null || typeof fd !== 'number') return
        unsynced = 0
        syncing = new Promise<void>((resolve) => fdatasync(fd, () => { syncing = null; resolve() }))
      }
      try {
        // Data events rather than an async iterator: no promise per chunk on a path that is CPU-bound.
        await new Promise<void>((resolve, reject) => {
          const body = response.body
          body.on('data', (chunk: Buffer) => {
            // More than the hub listed: the file is wrong whatever follows, and not a byte more is written.
            if (offset + chunk.length > file.size) {
              overrun = true
              body.destroy()
              resolve()
              return
            }
            stallTimer.refresh()
            blob?.update(chunk)
            offset += chunk.length
            opts.onBytes?.(chunk.length)
            unsynced += chunk.length
            if (unsynced >= SYNC_EVERY) syncBehind()
            // Held back while the file or the hash is behind; both catch up before more is read.
            const written = out.write(chunk)
            const hashed = hash.update(chunk)
            if (!written || !hashed) {
              body.pause()
              void Promise.all([written ? null : new Promise<void>((r) => out.once('drain', () => r())), hash.drained()]).then(() => body.resume())
            }
            onProgress({ file: file.path, total: file.size, completed: Math.min(offset, file.size) })
          })
          body.once('end', resolve)
          body.once('error', reject)
          out.once('error', (err) => { body.destroy(err); reject(err) })
        })
      } finally {
        // Never close the file under a sync that is still running on it.
        await syncing
        await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
      }
      if (overrun) {
        await rm(partial, { force: true })
        await rm(sidecar, { force: true })
        throw new GatewayError(502, `${file.path} came with more than the ${file.size} bytes the hub lists; the download was discarded`, { code: 'size_mismatch' })
      }
      clearTimeout(stallTimer)
      if (file.size === 0) break
      if (offset < file.size) throw new Error(`connection closed at ${offset} of ${file.size} bytes`)
    } catch (err) {
      clearTimeout(stallTimer)
      if (signal?.aborted) throw signal.reason ?? err
      if (err instanceof PrivateRedirectError) {
        // Sent where it may not be fetched from: nothing of the file is kept to resume from.
        await rm(partial, { force: true })
        await rm(sidecar, { force: true })
        throw err
      }
      if (stall.signal.aborted && attempt >= MAX_ATTEMPTS) throw new GatewayError(504, `the download of ${file.path} stalled (${(stall.signal.reason as Error).message}); pull again to resume`, { code: 'stalled' })
      if (err instanceof GatewayError || attempt >= MAX_ATTEMPTS) throw err
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new GatewayError(507, `the disk is full while writing ${file.path}: free some space and pull again (the partial download is kept)`, { code: 'disk_full' })
      opts.onRetry?.(`${file.path}: ${(err as Error).message}`)
      await wait(retryDelayMs(attempt), signal)
    }
  }
  if (offset !== file.size) {
    await rm(partial, { force: true })
    throw new GatewayError(502, `${file.path} came with ${offset} bytes where the hub lists ${file.size}; the download was discarded`, { code: 'size_mismatch' })
  }
  const digest = await hash.digest()
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
