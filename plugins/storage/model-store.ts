import { mkdir, readdir, rm, rmdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ConflictError, GatewayError, ModelNotFoundError } from '../../core/base/errors.js'
import { parseModelName, readModelName } from '../../core/base/model-name.js'
import { BlobStore } from './blob-store.js'
import { ChangeFeed, type ChangeFeedOptions } from './change-feed.js'
import { readGgufInfo } from './gguf-info.js'
import { forgetOwner, recordOwner } from './lock-owner.js'
import { MANIFEST, readManifest, removeTemporaryManifests, syncFiles, writeManifest, type GgufInfo, type Manifest, type ManifestFile } from './manifest.js'
import { ModelCreation } from './model-creation.js'
import { recordOf, type ModelRecord } from './model-record.js'
import { readProjectorHeader, type ProjectorInput } from './projector-inputs.js'
import type { ManifestInput, ModelWriter, OpenWriterOptions } from './model-writer.js'
import { findModelDir, isInside, keyToId, modelKey, STATE_DIR } from './store-layout.js'
import { reachOf, type NameReach } from './name-reach.js'
import { takeLock } from './take-lock.js'

interface ModelStoreOptions {
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
  /**
   * Other names for stored models (config.yaml's `models.<name>.aliases`): the names agents ask for
   * (`claude-sonnet-4-5`), by their lower case, each with the model it reaches. A stored model's own name wins.
   */
  aliases?: ReadonlyMap<string, string>
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
  private readonly creation = new ModelCreation(this)
  /** Other names for stored models, by their lower case (see ModelStoreOptions). */
  readonly aliases: ReadonlyMap<string, string>
  /** Uploads for `/api/create`, by digest. */
  readonly blobs: BlobStore

  constructor (readonly modelsDir: string, options: ModelStoreOptions = {}) {
    this.lockStaleMs = Math.max(2000, options.lockStaleMs ?? 10_000)
    this.lockWaitMs = options.lockWaitMs ?? 600_000
    this.warn = options.onWarning ?? (() => {})
    this.aliases = options.aliases ?? new Map()
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

  /** Case-insensitive, as on the hub; a `:tag` is ignored; an alias reaches its model. @throws InvalidModelNameError */
  find (name: string): ModelRecord | null {
    const reach = this.reach(name)
    if (reach === null) return this.records.get(modelKey(parseModelName(name).id)) ?? null
    // An alias is not a model name, so it may be any string; the model it names must be one.
    return 'stored' in reach ? reach.stored : this.records.get(modelKey(parseModelName(reach.alias).id)) ?? null
  }

  /** `find` that never throws: null for a name that is not a model name too (a request for an upstream's model). */
  lookup (name: string): ModelRecord | null {
    const reach = this.reach(name)
    if (reach === null) return null
    if ('stored' in reach) return reach.stored
    const target = readModelName(reach.alias)
    return target === null ? null : this.records.get(modelKey(target.id)) ?? null
  }

  /** What `name` reaches (name-reach.ts): the stored model of that name, else the model its alias names. Never throws. */
  reach (name: string): NameReach<ModelRecord> {
    return reachOf(name, (n) => this.findStored(n), (n) => this.aliasOf(n))
  }

  /** @throws InvalidModelNameError, ModelNotFoundError (naming an alias's model) */
  get (name: string): ModelRecord {
    const record = this.find(name)
    if (!record) throw new ModelNotFoundError(parseModelName(this.aliasOf(name) ?? name).id)
    return record
  }

  private aliasOf (name: string): string | undefined {
    return this.aliases.get(name.toLowerCase())
  }

  /** The stored model of that name, undefined when the name is not a valid one or nothing is stored under it. */
  private findStored (name: string): ModelRecord | undefined {
    const parsed = readModelName(name)
    return parsed === null ? undefined : this.records.get(modelKey(parsed.id))
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

  // Making models (import, copy, create, variants) lives in ModelCreation, on this store's writers; these stay
  // here so that the server, the CLI and the scripts keep one door into the models folder.
  /** A GGUF on this disk made a model: `ModelCreation.import`. */
  import (...args: Parameters<ModelCreation['import']>): Promise<ModelRecord> { return this.creation.import(...args) }
  /** A second name of a model (Ollama's copy): `ModelCreation.copy`. */
  copy (...args: Parameters<ModelCreation['copy']>): Promise<ModelRecord> { return this.creation.copy(...args) }
  /** Ollama's create from a local model: `ModelCreation.createFrom`. */
  createFrom (...args: Parameters<ModelCreation['createFrom']>): Promise<ModelRecord> { return this.creation.createFrom(...args) }
  /** Ollama's create from GGUF files on this disk: `ModelCreation.createFromFiles`. */
  createFromFiles (...args: Parameters<ModelCreation['createFromFiles']>): Promise<ModelRecord> { return this.creation.createFromFiles(...args) }
  /** A converted GGUF of a SafeTensors model recorded in its manifest: `ModelCreation.addVariant`. */
  addVariant (...args: Parameters<ModelCreation['addVariant']>): Promise<ModelRecord> { return this.creation.addVariant(...args) }

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
    let projectorInputs: ProjectorInput[] | undefined
    if (input.projector) {
      if (!input.files.some((f) => f.name === input.projector)) throw new Error(`manifest of "${input.name}" names a projector that is not one of its files: ${JSON.stringify(input.projector)}`)
      const projector = await readProjectorHeader(join(dir, input.projector)).catch((err: Error) => {
        throw new GatewayError(422, `model "${input.name}": its projector ${input.projector} is not a readable GGUF file (${err.message})`, { code: 'invalid_gguf' })
      })
      // llama.cpp's converter writes every projector under the architecture `clip`; anything else would fail the load.
      if (projector.architecture !== 'clip') {
        throw new GatewayError(422, `model "${input.name}": ${input.projector} is not a projector (its architecture is ${projector.architecture ?? 'unnamed'}, not clip)`, { code: 'invalid_projector' })
      }
      projectorInputs = projector.inputs
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
    const manifest: Manifest = { version: 1, ...input, ...(projectorInputs !== undefined ? { projector_inputs: projectorInputs } : {}), variants, gguf, modified_at: new Date().toISOString() }
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

function sameFiles (a: ManifestFile[], b: ManifestFile[]): boolean {
  return a.length === b.length && a.every((f) => b.some((g) => g.name === f.name && g.size === f.size && g.sha256 === f.sha256))
}
