import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import lockfile from 'proper-lockfile'
import { BadRequestError, ConflictError, ModelNotFoundError } from '../../core/errors.js'
import { parseModelName } from '../../core/model-name.js'
import { sha256File } from './file-hash.js'
import { formatParameterCount, readGgufInfo } from './gguf-info.js'
import { linkOrCopy } from './link-file.js'
import { readManifest, removeTemporaryManifests, writeManifest, type GgufInfo, type Manifest, type Variant } from './manifest.js'

/** A model as /api/tags lists it, plus what the rest of the gateway needs of it. */
export interface ModelRecord {
  name: string
  model: string
  size: number
  format: 'gguf' | 'safetensors'
  modified_at: string
  digest: string
  details: { parent_model: string, format: string, family: string | null, families: string[] | null, parameter_size: string | null, quantization_level: string | null }
  /** The model's folder. */
  dir: string
  manifest: Manifest
  gguf: GgufInfo | null
}

/** What a writer commits: the manifest less what the store fills in. */
export type ManifestInput = Omit<Manifest, 'version' | 'modified_at' | 'gguf' | 'variants'> & { variants?: Variant[] }

export interface ModelWriter {
  readonly dir: string
  /** The committed manifest, if the model was whole before. */
  readonly existing: Manifest | null
  /** Reads the primary GGUF's metadata, writes manifest.json atomically, refreshes the cache. */
  commit(input: ManifestInput): Promise<ModelRecord>
  /** Unlocks; idempotent. */
  release(): Promise<void>
}

// A lock not refreshed for this long belongs to a process that died: take it over.
const STALE_LOCK_MS = 10_000

/**
 * The one place that knows what is on disk. Models live in `<modelsDir>/<owner>/<name>/` with a
 * manifest.json written last and atomically; a folder without one is not listed (it may hold a download to
 * resume). Records are cached in memory and refreshed on every change this process makes, so listing never
 * reads the disk. Writers hold a cross-process lock (proper-lockfile) on the model.
 */
export class ModelStore {
  private readonly records = new Map<string, ModelRecord>()
  private readonly busy = new Set<string>()
  private readonly beforeDelete: Array<(name: string) => Promise<void>> = []
  private sorted: ModelRecord[] | null = null

  constructor (readonly modelsDir: string) {}

  /** Scans the folder: lists whole models, drops half-written manifests, keeps partial downloads. */
  async init (): Promise<void> {
    await mkdir(this.modelsDir, { recursive: true })
    this.records.clear()
    for (const owner of await readdir(this.modelsDir, { withFileTypes: true })) {
      if (!owner.isDirectory() || owner.name.startsWith('.')) continue
      for (const model of await readdir(join(this.modelsDir, owner.name), { withFileTypes: true })) {
        if (!model.isDirectory() || model.name.endsWith('.lock')) continue
        const dir = join(this.modelsDir, owner.name, model.name)
        await removeTemporaryManifests(dir, await readdir(dir))
        const read = await readManifest(dir)
        if (read) this.cache(dir, read.manifest, read.digest)
      }
    }
    this.sorted = null
  }

  onBeforeDelete (listener: (name: string) => Promise<void>): void { this.beforeDelete.push(listener) }

  /** Most recently modified first. */
  list (): ModelRecord[] {
    this.sorted ??= [...this.records.values()].sort((a, b) => b.modified_at.localeCompare(a.modified_at))
    return this.sorted
  }

  /** Case-insensitive, as on the hub; a `:tag` is ignored. */
  find (name: string): ModelRecord | null {
    return this.records.get(parseModelName(name).id.toLowerCase()) ?? null
  }

  /** @throws InvalidModelNameError, ModelNotFoundError */
  get (name: string): ModelRecord {
    const record = this.find(name)
    if (!record) throw new ModelNotFoundError(parseModelName(name).id)
    return record
  }

  modelDir (name: string): string {
    const { owner, name: model } = parseModelName(name)
    // An existing model keeps the case it was stored with.
    return this.find(name)?.dir ?? join(this.modelsDir, owner, model)
  }

  /** The GGUF to load: the model's own, or the variant of `dtype` for SafeTensors models (null if not made yet). */
  ggufPath (record: ModelRecord, dtype?: string): string | null {
    if (record.manifest.primary) return join(record.dir, record.manifest.primary)
    const variant = record.manifest.variants.find((v) => v.dtype === dtype)
    return variant ? join(record.dir, variant.file) : null
  }

  isBusy (name: string): boolean { return this.busy.has(parseModelName(name).id.toLowerCase()) }

  /** Takes the model's cross-process lock. @throws ConflictError when another writer holds it and `wait` is false */
  async openWriter (name: string, opts: { wait?: boolean } = {}): Promise<ModelWriter> {
    const id = parseModelName(name).id
    const key = id.toLowerCase()
    const dir = this.modelDir(id)
    await mkdir(dir, { recursive: true })
    let unlock: () => Promise<void>
    try {
      unlock = await lockfile.lock(dir, {
        stale: STALE_LOCK_MS,
        retries: opts.wait ? { retries: 600, minTimeout: 50, maxTimeout: 500 } : 0,
        realpath: false,
      })
    } catch (err) {
      if ((err as { code?: string }).code === 'ELOCKED') throw new ConflictError(`model "${id}" is being written by another process`)
      throw err
    }
    this.busy.add(key)
    const existing = (await readManifest(dir))?.manifest ?? null
    let released = false
    return {
      dir,
      existing,
      commit: async (input) => {
        const primary = input.primary ? join(dir, input.primary) : null
        const manifest: Manifest = {
          version: 1,
          ...input,
          variants: input.variants ?? existing?.variants ?? [],
          gguf: primary ? await readGgufInfo(primary) : existing?.gguf ?? null,
          modified_at: new Date().toISOString(),
        }
        const digest = await writeManifest(dir, manifest)
        return this.cache(dir, manifest, digest)
      },
      release: async () => {
        if (released) return
        released = true
        this.busy.delete(key)
        await unlock().catch(() => {})
      },
    }
  }

  /** Registers a GGUF already on disk, linked rather than copied where the file system allows. */
  async import (name: string, file: string): Promise<ModelRecord> {
    const id = parseModelName(name).id
    let info
    try {
      info = await stat(file)
    } catch {
      throw new BadRequestError(`cannot import ${file}: no such file`)
    }
    if (!info.isFile()) throw new BadRequestError(`cannot import ${file}: not a file`)
    try {
      await readGgufInfo(file)
    } catch (err) {
      throw new BadRequestError(`cannot import ${file}: not a GGUF file (${(err as Error).message})`)
    }
    const writer = await this.openWriter(id, { wait: true })
    try {
      const target = basename(file)
      const link = await linkOrCopy(file, join(writer.dir, target))
      return await writer.commit({
        name: id,
        format: 'gguf',
        source: { type: 'import', path: file, link },
        files: [{ name: target, size: info.size, sha256: await sha256File(file) }],
        primary: target,
      })
    } finally {
      await writer.release()
    }
  }

  /** Adds a GGUF made from a SafeTensors model (the converter's output) to its manifest. */
  async addVariant (name: string, variant: Variant): Promise<ModelRecord> {
    const writer = await this.openWriter(name, { wait: true })
    try {
      const current = writer.existing
      if (!current) throw new ModelNotFoundError(parseModelName(name).id)
      const { version, modified_at: _m, gguf: _g, ...input } = current
      return await writer.commit({ ...input, variants: [...current.variants.filter((v) => v.dtype !== variant.dtype), variant] })
    } finally {
      await writer.release()
    }
  }

  /** Unloads (through the listeners), then removes the model's folder. @throws ModelNotFoundError, ConflictError */
  async delete (name: string): Promise<void> {
    // A model being pulled for the first time is not listed yet, but deleting it is still a conflict.
    if (this.isBusy(name)) throw new ConflictError(`model "${parseModelName(name).id}" is being pulled or written; try again when that has finished`)
    const record = this.get(name)
    if (this.isBusy(record.name)) throw new ConflictError(`model "${record.name}" is being pulled or written; try again when that has finished`)
    for (const listener of this.beforeDelete) await listener(record.name)
    const writer = await this.openWriter(record.name).catch((err) => {
      if (err instanceof ConflictError) throw new ConflictError(`model "${record.name}" is being written by another process; try again later`)
      throw err
    })
    try {
      this.records.delete(record.name.toLowerCase())
      this.sorted = null
      await rm(record.dir, { recursive: true, force: true })
    } finally {
      await writer.release()
      await rm(`${record.dir}.lock`, { recursive: true, force: true })
    }
  }

  private cache (dir: string, manifest: Manifest, digest: string): ModelRecord {
    const files = manifest.files.reduce((sum, f) => sum + f.size, 0)
    const variants = manifest.variants.reduce((sum, v) => sum + v.size, 0)
    const g = manifest.gguf
    const record: ModelRecord = {
      name: manifest.name,
      model: manifest.name,
      size: files + variants,
      format: manifest.format,
      modified_at: manifest.modified_at,
      digest,
      details: {
        parent_model: '',
        format: manifest.format,
        family: g?.architecture ?? null,
        families: g?.architecture ? [g.architecture] : null,
        parameter_size: formatParameterCount(g?.parameter_count ?? null),
        quantization_level: g?.file_type ?? null,
      },
      dir,
      manifest,
      gguf: g,
    }
    this.records.set(manifest.name.toLowerCase(), record)
    this.sorted = null
    return record
  }
}

