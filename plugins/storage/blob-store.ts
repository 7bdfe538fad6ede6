import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream, type Stats } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BadRequestError, GatewayError, NotFoundError } from '../../core/base/errors.js'
import { formatBytes } from '../../core/base/units.js'
import { UploadQuota } from './upload-quota.js'

const DIGEST = /^sha256[:-]([0-9a-f]{64})$/
const BLOB_NAME = /^sha256-[0-9a-f]{64}$/

/** `sha256:<64 hex>` (Ollama's form; `sha256-` is accepted too) → the hex, or a 400 that says what is expected. */
function parseDigest (digest: string): string {
  const hex = DIGEST.exec(digest)?.[1]
  if (hex === undefined) throw new BadRequestError(`invalid digest ${JSON.stringify(digest)}: expected "sha256:" and 64 lowercase hex digits`, 'invalid_digest')
  return hex
}

/**
 * Files uploaded ahead of `/api/create` (Ollama's `POST /api/blobs/sha256:<hex>`), kept by their SHA-256 in the
 * models folder's state area, on the models' file system, so that a model made from one shares its bytes
 * through a hard link. An upload is written under a temporary name and hashed as it arrives; only a whole,
 * matching upload is renamed to its digest, so a blob present is always a blob verified.
 */
export class BlobStore {
  private readonly dir: string
  private readonly quotas = new UploadQuota()

  constructor (stateDir: string) {
    this.dir = join(stateDir, 'blobs')
  }

  /** Removes uploads a killed process left half-written. */
  async init (): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    for (const name of await readdir(this.dir)) if (name.includes('.partial-')) await rm(join(this.dir, name), { force: true })
  }

  /** A fresh temporary path inside the blob area, on the models' file system (removed at the next start if a crash leaves it). */
  temporaryPath (): string {
    return join(this.dir, `made.partial-${process.pid}-${randomBytes(4).toString('hex')}`)
  }

  /**
   * The uploaded blob a model's file `name` is to be made of.
   * @throws BadRequestError on a malformed digest, or a blob never uploaded (saying where to send it)
   */
  async fileFor (name: string, digest: string): Promise<{ name: string, path: string, sha256: string }> {
    const path = await this.find(digest)
    if (path === null) throw new BadRequestError(`blob ${digest} for ${name} was not uploaded: POST it to /api/blobs/${digest} first`, 'blob_not_found')
    return { name, path, sha256: parseDigest(digest) }
  }

  /** The blob's path, or null when no such blob was uploaded. @throws BadRequestError on a malformed digest */
  async find (digest: string): Promise<string | null> {
    const path = join(this.dir, `sha256-${parseDigest(digest)}`)
    return (await stat(path).catch(() => null))?.isFile() === true ? path : null
  }

  /**
   * Stores an upload under its digest. Resolves `created: false` when the blob was already there (the body is
   * drained unread). `size` is the length the client declared, when it did: an upload the disk or the quota
   * cannot hold is refused before a byte is written, as a pull is; one without a declared length is cut where it
   * passes the quota. `quota` bounds the bytes of blobs no model is made from, uploads under way included (null:
   * none). The body is left undestroyed when the upload is refused, so that the refusal reaches the client.
   * @throws BadRequestError when the bytes do not hash to the digest (nothing is kept); 507 when the disk has no
   * room (`disk_full`) or the upload would pass the quota (`blob_quota`)
   */
  async put (digest: string, body: Readable, options: { size?: number, quota?: number | null } = {}): Promise<{ created: boolean }> {
    const { size, quota = null } = options
    const hex = parseDigest(digest)
    const target = join(this.dir, `sha256-${hex}`)
    const existing = await stat(target).catch(() => null)
    if (existing?.isFile()) {
      body.resume()
      return { created: false }
    }
    await mkdir(this.dir, { recursive: true })
    if (size !== undefined) {
      const fs = await statfs(this.dir)
      const free = fs.bavail * fs.bsize
      if (size > free) throw new GatewayError(507, `not enough disk space for this upload: it is ${formatBytes(size)}, ${formatBytes(free)} are free`, { code: 'disk_full' })
    }
    const quotas = this.quotas
    // What this upload holds of quotas.reserved: its declared size at once, or what it has received so far.
    const reservation = { bytes: 0 }
    const partial = `${target}.partial-${process.pid}-${randomBytes(4).toString('hex')}`
    const hash = createHash('sha256')
    try {
      if (quota !== null) await quotas.reserve(quota, size ?? 0, reservation, () => this.unusedBytes())
      // Read through an iterator that leaves the request alive when the upload stops early (the quota, a full
      // disk): destroying it would close the connection before the 507 is sent.
      const metered = async function * (): AsyncGenerator<Buffer> {
        for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
          hash.update(chunk)
          if (size === undefined && quota !== null) quotas.grow(quota, chunk.length, reservation)
          yield chunk
        }
      }
      await pipeline(metered, createWriteStream(partial))
      const got = hash.digest('hex')
      if (got !== hex) throw new BadRequestError(`digest mismatch, expected "sha256:${hex}", got "sha256:${got}"`, 'digest_mismatch')
      const file = await open(partial, 'r')
      try { await file.datasync() } finally { await file.close() }
      await quotas.settle(reservation, () => rename(partial, target))
      return { created: true }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new GatewayError(507, 'the disk filled up during this upload: free some space and send it again', { code: 'disk_full' })
      throw err
    } finally {
      quotas.release(reservation)
      await rm(partial, { force: true })
    }
  }

  /** Bytes of the whole blobs no model is made from. */
  async unusedBytes (): Promise<number> {
    let total = 0
    for await (const { info } of this.unusedBlobs()) total += info.size
    return total
  }

  /** Removes an uploaded blob (a model made from it keeps its own link to the bytes). @throws NotFoundError when there is none */
  async remove (digest: string): Promise<void> {
    const path = await this.find(digest)
    if (path === null) throw new NotFoundError(`blob ${digest} not found`)
    await rm(path, { force: true })
  }

  /**
   * Removes the blobs no model holds that have been so for `unusedMs`: a model made from a blob shares its bytes
   * through a hard link, so a blob with one link is held by nothing; its change time is when it last gained or
   * lost one (its upload, or its last model's deletion). Resolves with the digests removed.
   */
  async reclaim (unusedMs: number, now = Date.now()): Promise<string[]> {
    const removed: string[] = []
    for await (const { name, path, info } of this.unusedBlobs()) {
      if (now - info.ctimeMs < unusedMs) continue
      await rm(path, { force: true })
      removed.push(name.replace('-', ':'))
    }
    return removed
  }

  /**
   * The whole blobs no model is made from: a model made from a blob shares its bytes through a hard link, so only
   * a blob with one link holds bytes of its own.
   */
  private async * unusedBlobs (): AsyncGenerator<{ name: string, path: string, info: Stats }> {
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      if (!BLOB_NAME.test(name)) continue
      const path = join(this.dir, name)
      const info = await stat(path).catch(() => null)
      if (info !== null && info.isFile() && info.nlink === 1) yield { name, path, info }
    }
  }
}
