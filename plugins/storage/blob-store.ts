import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BadRequestError } from '../../core/errors.js'

const DIGEST = /^sha256[:-]([0-9a-f]{64})$/

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
   * drained unread). @throws BadRequestError when the bytes do not hash to the digest (nothing is kept)
   */
  async put (digest: string, body: Readable): Promise<{ created: boolean }> {
    const hex = parseDigest(digest)
    const target = join(this.dir, `sha256-${hex}`)
    const existing = await stat(target).catch(() => null)
    if (existing?.isFile()) {
      body.resume()
      return { created: false }
    }
    await mkdir(this.dir, { recursive: true })
    const partial = `${target}.partial-${process.pid}-${randomBytes(4).toString('hex')}`
    const hash = createHash('sha256')
    try {
      body.on('data', (chunk: Buffer) => { hash.update(chunk) })
      await pipeline(body, createWriteStream(partial))
      const got = hash.digest('hex')
      if (got !== hex) throw new BadRequestError(`digest mismatch, expected "sha256:${hex}", got "sha256:${got}"`, 'digest_mismatch')
      const file = await open(partial, 'r')
      try { await file.datasync() } finally { await file.close() }
      await rename(partial, target)
      return { created: true }
    } finally {
      await rm(partial, { force: true })
    }
  }
}
