import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { GatewayError, NotFoundError } from '../../core/base/errors.js'
import { writeWhole } from '../../core/base/write-whole.js'

/** OpenAI's file object, as `/v1/files` answers it. */
export interface FileObject {
  id: string
  object: 'file'
  bytes: number
  created_at: number
  filename: string
  purpose: string
  status: 'processed'
  expires_at: null
  status_details: null
}

/** A stored file and whose it is: the API key's name that made it (null: made while keys were off). */
export interface FileRecord { file: FileObject, owner: string | null }

/** What files may take: one file's bytes, and all of one owner's together. */
export interface FileLimits { fileBytes: number, bytesPerOwner: number }

const ID = /^file-[0-9a-z-]{8,80}$/

/**
 * The files of the Batch APIs (`/v1/files`): each under `<dir>/<id>.data`, its record beside it (`<id>.json`), both
 * written whole (a record only once its data is whole), so that a crash leaves a file listed whole or not at all.
 * Every lookup takes the owner: another key's file is not found, whatever its id.
 */
export class FileStore {
  private readonly records = new Map<string, FileRecord>()

  constructor (private readonly dir: string, private readonly limits: FileLimits) {}

  /** Reads the records on disk (a data file without its record is a crash's leftover: removed). */
  async load (): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    const names = await readdir(this.dir)
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      try {
        const record = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as FileRecord
        if (ID.test(record.file?.id ?? '') && names.includes(`${record.file.id}.data`)) this.records.set(record.file.id, record)
      } catch { /* a record that does not read is left out */ }
    }
    for (const name of names) {
      const id = name.replace(/\.(data|json)$/, '').replace(/\.tmp-.*$/, '')
      if (!this.records.has(id) || name.includes('.tmp-')) await rm(join(this.dir, name), { force: true })
    }
  }

  /** A new id. */
  static newId (): string { return `file-${randomBytes(12).toString('hex')}` }

  /** Stores `content` as a new file of `owner`. @throws GatewayError 413 past a limit */
  async add (owner: string | null, filename: string, purpose: string, content: Uint8Array): Promise<FileObject> {
    this.checkRoom(owner, content.byteLength)
    const id = FileStore.newId()
    await writeWhole(this.dataPath(id), content, 0o600)
    return await this.record(id, owner, filename, purpose, content.byteLength)
  }

  /**
   * Takes the file at `path` (a batch's results, written beside it) in as file `id` of `owner`: moved, not copied.
   * A file of that id already there is kept (a finalization done again after a crash).
   */
  async adopt (id: string, owner: string | null, filename: string, purpose: string, path: string): Promise<FileObject> {
    const known = this.records.get(id)
    if (known !== undefined) return known.file
    await rename(path, this.dataPath(id))
    return await this.record(id, owner, filename, purpose, (await stat(this.dataPath(id))).size)
  }

  /** The file `id` if it is `owner`'s. @throws NotFoundError otherwise (the same words whether it exists or not) */
  get (owner: string | null, id: string): FileRecord {
    const record = this.records.get(id)
    if (record === undefined || record.owner !== owner) throw new NotFoundError(`no file with id "${id}"`)
    return record
  }

  /** Whether the file `id` exists (anyone's). */
  has (id: string): boolean { return this.records.has(id) }

  /** `owner`'s files, oldest first (`order: 'desc'`: newest first), of `purpose` if given. */
  list (owner: string | null, purpose?: string): FileObject[] {
    return [...this.records.values()].filter((r) => r.owner === owner && (purpose === undefined || r.file.purpose === purpose)).map((r) => r.file)
  }

  dataPath (id: string): string { return join(this.dir, `${id}.data`) }

  /** Deletes `owner`'s file `id`. @throws NotFoundError */
  async delete (owner: string | null, id: string): Promise<void> {
    this.get(owner, id)
    this.records.delete(id)
    await rm(join(this.dir, `${id}.json`), { force: true })
    await rm(this.dataPath(id), { force: true })
  }

  /** @throws GatewayError 413 when `bytes` more would pass a file's limit or the owner's */
  checkRoom (owner: string | null, bytes: number): void {
    const { fileBytes, bytesPerOwner } = this.limits
    if (bytes > fileBytes) throw new GatewayError(413, `the file is ${bytes} bytes, more than limits.batch_file_size (${fileBytes})`, { code: 'file_too_large' })
    const held = this.list(owner).reduce((sum, f) => sum + f.bytes, 0)
    if (held + bytes > bytesPerOwner) {
      throw new GatewayError(413, `this key's files hold ${held} bytes; ${bytes} more would pass limits.batch_files_per_key (${bytesPerOwner}): delete some first`, { code: 'files_quota_exceeded' })
    }
  }

  private async record (id: string, owner: string | null, filename: string, purpose: string, bytes: number): Promise<FileObject> {
    const file: FileObject = { id, object: 'file', bytes, created_at: Math.floor(Date.now() / 1000), filename, purpose, status: 'processed', expires_at: null, status_details: null }
    await writeWhole(join(this.dir, `${id}.json`), JSON.stringify({ file, owner } satisfies FileRecord), 0o600)
    this.records.set(id, { file, owner })
    return file
  }
}
