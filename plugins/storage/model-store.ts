import { mkdir, readdir, rm, rmdir, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { BadRequestError, ConflictError, GatewayError, ModelNotFoundError } from '../../core/errors.js'
import { parseModelName } from '../../core/model-name.js'
import { BlobStore } from './blob-store.js'
import { ChangeFeed, type ChangeFeedOptions } from './change-feed.js'
import { sha256File } from './file-hash.js'
import { readGgufInfo } from './gguf-info.js'
import { ggufParts, hardLinkOrCopy, isLaterSplitPart, linkOrCopy, type LinkKind } from './link-file.js'
import { forgetOwner, recordOwner } from './lock-owner.js'
import { MANIFEST, readManifest, removeTemporaryManifests, syncFiles, writeManifest, type GgufInfo, type Manifest, type ManifestFile, type Variant } from './manifest.js'
import { recordOf, type ModelRecord } from './model-record.js'
import { findModelDir, isInside, keyToId, modelKey, STATE_DIR } from './store-layout.js'
import { takeLock } from './take-lock.js'

/** What a writer commits: the manifest less what the store fills in. */
export type ManifestInput = Omit<Manifest, 'version' | 'modified_at' | 'gguf' | 'variants'> & {
  /** The converted variants; left out, those of the committed model are kept while its files are unchanged. */
  variants?: Variant[]
}

/** What a created model has of its own (`/api/create`): its system prompt, default options, chat template. */
export type ModelSettings = Pick<Manifest, 'system' | 'parameters' | 'template'>

/** A file on this disk (a verified upload, a quantized output) to make a model of, under `name`. */
export interface LocalFile { name: string, path: string, sha256: string }

/** A file name a created model may use: a plain `.gguf` name in its folder. @throws BadRequestError */
export function checkModelFileName (name: string): void {
  if (!/^[\w.-]+\.gguf$/i.test(name) || name.startsWith('.')) throw new BadRequestError(`file name ${JSON.stringify(name)} is not a GGUF file name (letters, digits, . _ -, ending in .gguf)`)
}

/** A committed manifest as the input of the next commit: what the store derives again (GGUF facts, time) left out. */
function manifestInput (manifest: Manifest): ManifestInput & { variants: Variant[] } {
  const { version: _v, modified_at: _m, gguf: _g, ...input } = manifest
  return input
}

/** `given` over `base`: what is given replaces, parameters merge key by key. */
export function inheritSettings (base: ModelSettings | null, given: ModelSettings): ModelSettings {
  const system = given.system ?? base?.system
  const template = given.template ?? base?.template
  const parameters = base?.parameters || given.parameters ? { ...base?.parameters, ...given.parameters } : undefined
  return { ...(system !== undefined ? { system } : {}), ...(template !== undefined ? { template } : {}), ...(parameters ? { parameters } : {}) }
}

/** Write access to one model, holding its cross-process lock. Always `release()` it (in a `finally`). */
export interface ModelWriter {
  /** The model folder (created). Write files here; the model is listed once `commit` has run. */
  readonly dir: string
  /** The committed manifest, if the model was whole before. */
  readonly existing: Manifest | null
  /**
   * Reads the metadata of the primary GGUF (or of the first variant), writes manifest.json atomically,
   * removes the files of the previous manifest that the new one no longer names, refreshes the cache.
   * @throws ConflictError when the lock was lost (another process took it over as stale)
   */
  commit(input: ManifestInput): Promise<ModelRecord>
  /** Unlocks and unmarks the model busy. Idempotent. */
  release(): Promise<void>
}

/** How `openWriter` treats a model another writer holds. */
export interface OpenWriterOptions {
  /** Wait for the other writer (of this or another process) instead of failing with 409. @default false */
  wait?: boolean
  /**
   * How long to wait; Infinity waits as long as the holder lives and keeps its lock fresh (a pull, whose
   * client can leave). @default the store's lockWaitMs
   */
  waitMs?: number
  /** Gives up the wait (a client that left): rejects with its reason, holding nothing. */
  signal?: AbortSignal
  /** Called once when the lock is found taken and the wait begins. */
  onWait?: () => void
}

export interface ModelStoreOptions {
  /**
   * A writer's lock not refreshed for this long belongs to a process that died; the next writer takes it
   * over (proper-lockfile refreshes a live lock every half of this; its minimum is 2000).
   * @default 10000
   */
  lockStaleMs?: number
  /**
   * How long `openWriter(id, { wait: true })` waits for another writer of the same model.
   * @default 600000
   */
  lockWaitMs?: number
  /**
   * How the store hears changes by other processes: inotify on this host, a poll for other hosts' (replicas on a
   * shared volume). @default { pollMs: 2000, watch: true }
   */
  changes?: ChangeFeedOptions
  /** Where to report what the store skips (a broken manifest) or cannot do (watch the folder). @default nothing */
  onWarning?: (message: string) => void
}

/**
 * The one place that knows what is on disk. Models live in `<modelsDir>/<owner>/<name>/` with a
 * manifest.json written last and atomically; a folder without one is not listed (it may hold a download to
 * resume). Records are cached in memory and refreshed on every change (this process's, and through the
 * change feed other processes'), so listing never reads the disk. Writers hold a cross-process lock
 * (proper-lockfile) per model, keyed case-insensitively.
 */
export class ModelStore {
  private readonly records = new Map<string, ModelRecord>()
  private readonly busy = new Set<string>()
  private readonly beforeDelete: Array<(id: string) => Promise<void>> = []
  private sorted: ModelRecord[] | null = null
  private readonly lockStaleMs: number
  private readonly lockWaitMs: number
  private readonly warn: (message: string) => void
  private readonly feed: ChangeFeed
  private readonly pending = new Set<string>()
  private draining: Promise<void> | null = null
  /** Uploads for `/api/create`, by digest. */
  readonly blobs: BlobStore

  constructor (readonly modelsDir: string, options: ModelStoreOptions = {}) {
    this.lockStaleMs = Math.max(2000, options.lockStaleMs ?? 10_000)
    this.lockWaitMs = options.lockWaitMs ?? 600_000
    this.warn = options.onWarning ?? (() => {})
    this.feed = new ChangeFeed(join(modelsDir, STATE_DIR, 'changes'), options.changes)
    this.blobs = new BlobStore(join(modelsDir, STATE_DIR))
  }

  /** Scans the folder: lists whole models, drops half-written manifests, keeps partial downloads. */
  async init (): Promise<void> {
    await mkdir(join(this.modelsDir, STATE_DIR, 'locks'), { recursive: true })
    await this.blobs.init()
    this.records.clear()
    const found: Array<{ id: string, dir: string }> = []
    for (const owner of await readdir(this.modelsDir, { withFileTypes: true })) {
      if (!owner.isDirectory() || owner.name.startsWith('.')) continue
      for (const model of await readdir(join(this.modelsDir, owner.name), { withFileTypes: true })) {
        if (model.isDirectory()) found.push({ id: `${owner.name}/${model.name}`, dir: join(this.modelsDir, owner.name, model.name) })
      }
    }
    // A few folders at a time: a thousand models start in a fraction of the time one by one takes.
    for (let i = 0; i < found.length; i += 32) {
      await Promise.all(found.slice(i, i + 32).map(async ({ id, dir }) => {
        // Only temp manifests go: `*.partial` and their `.partial.json` are downloads to resume.
        await removeTemporaryManifests(dir, await readdir(dir))
        await this.load(id, dir)
      }))
    }
    this.sorted = null
  }

  /**
   * Follows changes other processes make to the folder (an import while the server runs, another replica's
   * pull or delete): this host's at once (inotify), other hosts' within the poll's period. Call `close()` to stop.
   */
  async watchChanges (): Promise<void> {
    await this.feed.watch((key) => this.enqueueRefresh(key), (err) => this.warn(`models folder: cannot watch it for changes by other processes (${err.message}); they show only as often as it is polled, or after a restart`))
  }

  close (): void { this.feed.close() }

  /**
   * Runs `listener(id)` before a model's files are removed (the scheduler unloads it). The model is still
   * listed then, and busy (`isBusy`): it is locked against writers for the whole deletion.
   */
  onBeforeDelete (listener: (id: string) => Promise<void>): void { this.beforeDelete.push(listener) }

  /** Most recently modified first; from memory. */
  list (): ModelRecord[] {
    this.sorted ??= [...this.records.values()].sort((a, b) => a.modified_at < b.modified_at ? 1 : a.modified_at > b.modified_at ? -1 : a.name.localeCompare(b.name))
    return this.sorted
  }

  /** Case-insensitive, as on the hub; a `:tag` is ignored. @throws InvalidModelNameError */
  find (name: string): ModelRecord | null {
    return this.records.get(modelKey(parseModelName(name).id)) ?? null
  }

  /** @throws InvalidModelNameError, ModelNotFoundError */
  get (name: string): ModelRecord {
    const record = this.find(name)
    if (!record) throw new ModelNotFoundError(parseModelName(name).id)
    return record
  }

  /**
   * `<modelsDir>/<owner>/<name>`: the folder of an existing model (in whatever case it was stored), else
   * where a new one goes. @throws InvalidModelNameError
   */
  modelDir (id: string): string {
    const { owner, name } = parseModelName(id)
    return this.find(id)?.dir ?? findModelDir(this.modelsDir, owner, name)
  }

  /**
   * The GGUF to load: for GGUF models the model file (the first part of a split one); for SafeTensors
   * models the variant of `dtype`, or null if it has not been converted yet.
   */
  ggufPath (record: ModelRecord, dtype?: string): string | null {
    if (record.manifest.primary) return join(record.dir, record.manifest.primary)
    const variant = record.manifest.variants.find((v) => v.dtype === dtype)
    return variant ? join(record.dir, variant.file) : null
  }

  /** The vision projector to load beside the model (`--mmproj`), or null when it has none. */
  projectorPath (record: ModelRecord): string | null {
    return record.projector === null ? null : join(record.dir, record.projector)
  }

  /** Whether this process is writing (pulling, converting, deleting) the model. */
  isBusy (name: string): boolean { return this.busy.has(modelKey(parseModelName(name).id)) }

  /**
   * Takes the model's cross-process lock and marks it busy (delete answers 409 meanwhile).
   * @throws InvalidModelNameError; ConflictError when another writer (of this or another process) holds the
   *   lock and `wait` is false, or still holds it after the wait; the signal's reason when it aborts the wait
   */
  async openWriter (name: string, opts: OpenWriterOptions = {}): Promise<ModelWriter> {
    const { id, owner, name: model } = parseModelName(name)
    const key = modelKey(id)
    const lockPath = join(this.modelsDir, STATE_DIR, 'locks', key)
    await mkdir(dirname(lockPath), { recursive: true })
    const ownerPath = `${lockPath}.owner`
    let lost: Error | null = null
    let unlock: () => Promise<void>
    try {
      unlock = await takeLock(lockPath, {
        staleMs: this.lockStaleMs,
        waitMs: opts.wait ? opts.waitMs ?? this.lockWaitMs : 0,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onWait ? { onWait: opts.onWait } : {}),
        // proper-lockfile's default throws from a timer (the process dies); a writer that lost its lock
        // must only be kept from committing.
        onCompromised: (err) => { lost = err },
      })
    } catch (err) {
      if ((err as { code?: string }).code === 'ELOCKED') throw new ConflictError(`model "${id}" is being pulled or written by another process; try again when that has finished`)
      throw err
    }
    await recordOwner(ownerPath, `${lockPath}.lock`).catch(() => {})
    this.busy.add(key)
    let released = false
    const release = async (): Promise<void> => {
      if (released) return
      released = true
      this.busy.delete(key)
      await forgetOwner(ownerPath).catch(() => {})
      await unlock().catch(() => {}) // a compromised lock is no longer ours to remove
    }
    try {
      // Under the lock, so that a second process lands in the folder the first one created.
      const dir = this.records.get(key)?.dir ?? findModelDir(this.modelsDir, owner, model)
      await mkdir(dir, { recursive: true })
      const existing = (await readManifest(dir))?.manifest ?? null
      return {
        dir,
        existing,
        commit: async (input) => {
          if (released) throw new Error(`the writer of "${id}" was released before commit`)
          if (parseModelName(input.name).id.toLowerCase() !== id.toLowerCase()) throw new Error(`a writer of "${id}" cannot commit "${input.name}"`)
          const record = await this.commit(key, dir, existing, input, () => lost)
          await this.feed.notify(key).catch((err: Error) => this.warn(`models folder: could not signal the change of ${id} (${err.message})`))
          return record
        },
        release,
      }
    } catch (err) {
      await release()
      throw err
    }
  }

  /**
   * Registers a GGUF already on disk (all parts of a split one), linked rather than copied where the file
   * system allows; the manifest says where it came from and how it was linked.
   * @throws InvalidModelNameError, BadRequestError (no such file, not a GGUF), ConflictError
   */
  async import (name: string, file: string, options: { projector?: string } = {}): Promise<ModelRecord> {
    const { id } = parseModelName(name)
    const source = await readableGguf(file)
    const projector = options.projector === undefined ? null : await readableGguf(options.projector)
    if (projector !== null && basename(projector) === basename(source)) throw new BadRequestError(`cannot import ${options.projector} as the projector: it has the model file's name (they would share one file in the model's folder)`)
    let parts: string[]
    try {
      parts = await ggufParts(source)
    } catch (err) {
      throw new BadRequestError(`cannot import ${file}: ${(err as Error).message}`)
    }
    const writer = await this.openWriter(id, { wait: true })
    try {
      const files: ManifestFile[] = []
      let link: LinkKind | undefined
      for (const part of parts) {
        const target = join(writer.dir, basename(part))
        const kind = await linkOrCopy(part, target)
        link ??= kind
        files.push({ name: basename(part), size: (await stat(target)).size, sha256: await sha256File(target) })
      }
      if (projector !== null) {
        const target = join(writer.dir, basename(projector))
        await linkOrCopy(projector, target)
        files.push({ name: basename(projector), size: (await stat(target)).size, sha256: await sha256File(target) })
      }
      return await writer.commit({
        name: id,
        format: 'gguf',
        source: { type: 'import', path: source, link },
        files,
        primary: basename(source),
        variants: [],
        ...(projector !== null ? { projector: basename(projector) } : {}),
      })
    } finally {
      await writer.release()
    }
  }

  /**
   * Makes `to` a second name of the model `from` (Ollama's copy): its files hard-linked into the new folder, so
   * that no byte is copied and either name can be deleted without the other. An existing `to` is replaced.
   * @throws InvalidModelNameError, ModelNotFoundError, BadRequestError (the same name), ConflictError (either
   *   being written)
   */
  async copy (from: string, to: string): Promise<ModelRecord> {
    return this.derive(from, to, (manifest, id, link) => ({ ...manifest, name: id, source: { type: 'copy', model: manifest.name, link } }))
  }

  /**
   * Ollama's create from a local model: its files shared, as by copy, with `settings` over its own.
   * @throws ModelNotFoundError (from), BadRequestError (the same name), ConflictError
   */
  async createFrom (name: string, from: string, settings: ModelSettings): Promise<ModelRecord> {
    return this.derive(from, name, (manifest, id, link) => ({
      ...manifest, ...inheritSettings(manifest, settings), name: id, source: { type: 'create', model: manifest.name, link },
    }))
  }

  /**
   * Ollama's create from GGUF files on this disk (verified uploads, a quantized output): one GGUF, or the
   * parts of one split GGUF, linked into the model's folder under their names.
   * @throws BadRequestError (a bad file name, not one model), GatewayError 422 (not a GGUF), ConflictError
   */
  async createFromFiles (name: string, files: LocalFile[], settings: ModelSettings): Promise<ModelRecord> {
    const { id } = parseModelName(name)
    for (const file of files) checkModelFileName(file.name)
    const firsts = files.filter((f) => !isLaterSplitPart(f.name))
    if (firsts.length !== 1) throw new BadRequestError(`"files" must hold one GGUF (or the parts of one split GGUF); found ${firsts.length} models`)
    const primary = firsts[0]!
    // Checked before anything is linked: a model this one replaces keeps its files if the upload is no GGUF.
    await readGgufInfo(primary.path).catch((err: Error) => {
      throw new GatewayError(422, `model "${id}": ${primary.name} is not a readable GGUF file (${err.message})`, { code: 'invalid_gguf' })
    })
    const writer = await this.openWriter(id, { wait: true })
    try {
      return await this.linkAndCommit(writer, files.map((f) => ({ from: f.path, name: f.name })), async () => {
        await ggufParts(join(writer.dir, primary.name)).catch((err: Error) => { throw new BadRequestError(`"files": ${err.message}`) })
        const manifestFiles: ManifestFile[] = []
        for (const f of files) manifestFiles.push({ name: f.name, size: (await stat(f.path)).size, sha256: f.sha256 })
        return { name: id, format: 'gguf', source: { type: 'create' }, files: manifestFiles, primary: primary.name, variants: [], ...inheritSettings(null, settings) }
      })
    } finally {
      await writer.release()
    }
  }

  /**
   * A new model `to` made of the files of `from`, its manifest shaped by `shape`. Both models' locks are held:
   * the source is neither deleted nor rewritten while its files are linked (its lock is not waited for).
   */
  private async derive (from: string, to: string, shape: (manifest: ManifestInput & { variants: Variant[] }, id: string, link: LinkKind | undefined) => ManifestInput): Promise<ModelRecord> {
    const source = this.get(from)
    const { id } = parseModelName(to)
    if (modelKey(id) === modelKey(source.name)) throw new BadRequestError(`"${to}" is the model "${source.name}" itself: give another name`)
    const reading = await this.openWriter(source.name)
    try {
      const manifest = reading.existing
      if (!manifest) throw new ModelNotFoundError(source.name)
      const writer = await this.openWriter(id, { wait: true })
      try {
        const names = [...manifest.files.map((f) => f.name), ...manifest.variants.map((v) => v.file)]
        return await this.linkAndCommit(writer, names.map((name) => ({ from: join(reading.dir, name), name })),
          (link) => shape(manifestInput(manifest), id, link))
      } finally {
        await writer.release()
      }
    } finally {
      await reading.release()
    }
  }

  /**
   * Hard-links files into a writer's folder (a copy where the file system has none, never a symlink that would
   * break with its source), then commits the manifest `describe` gives. A new model that fails on the way leaves
   * nothing behind; a model it would have replaced keeps its manifest, and so stays whole.
   */
  private async linkAndCommit (writer: ModelWriter, links: Array<{ from: string, name: string }>, describe: (link: LinkKind | undefined) => ManifestInput | Promise<ManifestInput>): Promise<ModelRecord> {
    const linked: string[] = []
    try {
      let link: LinkKind | undefined
      for (const { from, name } of links) {
        const kind = await hardLinkOrCopy(from, join(writer.dir, name))
        linked.push(name)
        link ??= kind
      }
      return await writer.commit(await describe(link))
    } catch (err) {
      if (writer.existing === null) {
        for (const name of linked) await rm(join(writer.dir, name), { force: true })
        await rmdir(writer.dir).then(() => rmdir(dirname(writer.dir))).catch(() => {})
      }
      throw err
    }
  }

  /**
   * Adds a GGUF made from a SafeTensors model (the converter's output, already in the model's folder) to its
   * manifest, replacing one of the same dtype. @throws ModelNotFoundError, BadRequestError
   */
  async addVariant (name: string, variant: Variant): Promise<ModelRecord> {
    const writer = await this.openWriter(name, { wait: true })
    try {
      const current = writer.existing
      if (!current) throw new ModelNotFoundError(parseModelName(name).id)
      return await writer.commit({ ...manifestInput(current), variants: [...current.variants.filter((v) => v.dtype !== variant.dtype), variant] })
    } finally {
      await writer.release()
    }
  }

  /**
   * Removes a model: takes its lock (409 while it is being pulled or written, here or by another process),
   * runs the before-delete listeners (the scheduler unloads it), stops listing it, removes its folder. A
   * listener that throws stops the deletion: the model stays, whole.
   * @throws InvalidModelNameError, ModelNotFoundError, ConflictError
   */
  async delete (name: string): Promise<void> {
    const { id } = parseModelName(name)
    const key = modelKey(id)
    // A model being pulled for the first time is not listed yet, but deleting it is still a conflict.
    if (this.busy.has(key)) throw new ConflictError(`model "${id}" is being pulled or written; try again when that has finished`)
    const record = this.get(id)
    const writer = await this.openWriter(record.name)
    try {
      // Still listed while the listeners run: the scheduler looks the model up to unload it.
      for (const listener of this.beforeDelete) await listener(record.name)
      this.records.delete(key)
      this.sorted = null
      // The manifest first: another process reading the folder mid-removal finds no model, never one whose
      // files are half gone. A crash after it leaves an unlisted folder, as an interrupted pull does.
      await rm(join(record.dir, MANIFEST), { force: true })
      await rm(record.dir, { recursive: true, force: true })
      // The owner's folder goes with its last model; another model in it keeps it (ENOTEMPTY).
      await rmdir(dirname(record.dir)).catch(() => {})
      await this.feed.notify(key).catch((err: Error) => this.warn(`models folder: could not signal the deletion of ${id} (${err.message})`))
    } finally {
      await writer.release()
    }
  }

  private async commit (key: string, dir: string, existing: Manifest | null, input: ManifestInput, lost: () => Error | null): Promise<ModelRecord> {
    const named = [...input.files.map((f) => f.name), ...(input.variants ?? []).map((v) => v.file), ...(input.primary ? [input.primary] : [])]
    const outside = named.find((n) => !isInside(dir, n))
    if (outside !== undefined) throw new Error(`manifest of "${input.name}" names a file outside its folder: ${JSON.stringify(outside)}`)
    if (input.projector) {
      if (!input.files.some((f) => f.name === input.projector)) throw new Error(`manifest of "${input.name}" names a projector that is not one of its files: ${JSON.stringify(input.projector)}`)
      const projector = await readGgufInfo(join(dir, input.projector)).catch((err: Error) => {
        throw new GatewayError(422, `model "${input.name}": its projector ${input.projector} is not a readable GGUF file (${err.message})`, { code: 'invalid_gguf' })
      })
      // llama.cpp's converter writes every projector under the architecture `clip`; anything else would fail the load.
      if (projector.architecture !== 'clip') {
        throw new GatewayError(422, `model "${input.name}": ${input.projector} is not a vision projector (its architecture is ${projector.architecture ?? 'unnamed'}, not clip)`, { code: 'invalid_projector' })
      }
    }
    // Variants converted from other weights would be stale: kept only while the files are the same.
    const variants = input.variants ?? (existing && sameFiles(existing.files, input.files) ? existing.variants : [])
    const ggufFile = input.primary ?? variants[0]?.file ?? null
    let gguf: GgufInfo | null = null
    if (ggufFile) {
      try {
        gguf = await readGgufInfo(join(dir, ggufFile))
      } catch (err) {
        throw new GatewayError(422, `model "${input.name}": ${ggufFile} is not a readable GGUF file (${(err as Error).message})`, { code: 'invalid_gguf' })
      }
    }
    const manifest: Manifest = { version: 1, ...input, variants, gguf, modified_at: new Date().toISOString() }
    const kept = new Set([...manifest.files.map((f) => f.name), ...manifest.variants.map((v) => v.file)])
    await syncFiles(dir, kept)
    // Checked after the (possibly long) sync, right before the manifest makes the model visible.
    const error = lost()
    if (error) throw new ConflictError(`lost the write lock of "${input.name}" (${error.message}); another process may have taken it over`)
    const digest = await writeManifest(dir, manifest)
    for (const old of [...(existing?.files.map((f) => f.name) ?? []), ...(existing?.variants.map((v) => v.file) ?? [])]) {
      if (!kept.has(old) && isInside(dir, old)) await rm(join(dir, old), { force: true })
    }
    return this.cache(key, dir, manifest, digest)
  }

  /** Reads one model's manifest into the cache, or drops it from the cache when it is not whole. */
  private async load (id: string, dir: string): Promise<void> {
    const key = modelKey(id)
    const read = await readManifest(dir)
    if (!read) {
      if (this.records.delete(key)) this.sorted = null
      return
    }
    let named: string | null = null
    try { named = parseModelName(read.manifest.name).id } catch {}
    if (named === null || modelKey(named) !== key) {
      this.warn(`models folder: ${dir}/manifest.json names ${JSON.stringify(read.manifest.name)}, not ${id}; skipped`)
      return
    }
    this.cache(key, dir, read.manifest, read.digest)
  }

  private enqueueRefresh (key: string): void {
    if (keyToId(key) === null) return
    this.pending.add(key)
    this.draining ??= (async () => {
      // Events come in bursts (one write, several inotify events): let them settle, then read each model once.
      await new Promise((r) => setTimeout(r, 20))
      while (this.pending.size > 0) {
        const [next] = this.pending
        this.pending.delete(next!)
        // While this process holds the lock, no one else changes the model, and its own writes update the cache.
        if (this.busy.has(next!)) continue
        const id = keyToId(next!)!
        const [owner, name] = id.split('/') as [string, string]
        await this.load(id, findModelDir(this.modelsDir, owner, name)).catch((err: Error) => this.warn(`models folder: could not refresh ${id} (${err.message})`))
      }
    })().finally(() => { this.draining = null })
  }

  private cache (key: string, dir: string, manifest: Manifest, digest: string): ModelRecord {
    const record = recordOf(dir, manifest, digest)
    this.records.set(key, record)
    this.sorted = null
    return record
  }
}

/** The absolute path of a GGUF file to import. @throws BadRequestError when it is missing or no GGUF */
async function readableGguf (file: string): Promise<string> {
  const path = resolve(file)
  let info
  try {
    info = await stat(path)
  } catch {
    throw new BadRequestError(`cannot import ${file}: no such file`)
  }
  if (!info.isFile()) throw new BadRequestError(`cannot import ${file}: not a file`)
  try {
    await readGgufInfo(path)
  } catch (err) {
    throw new BadRequestError(`cannot import ${file}: not a GGUF file (${(err as Error).message})`)
  }
  return path
}

function sameFiles (a: ManifestFile[], b: ManifestFile[]): boolean {
  return a.length === b.length && a.every((f) => b.some((g) => g.name === f.name && g.size === f.size && g.sha256 === f.sha256))
}
