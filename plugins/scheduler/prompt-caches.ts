import { createHash, randomUUID } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../core/logger.js'
import { isAlive } from '../../core/process-alive.js'
import { readSlotStateTokens, type RuntimeEndpoint } from '../../runtimes/index.js'

/** What ties a saved cache to a runtime that can take it: the model file and the KV cache's types. */
export interface CacheShape { model: string, digest: string, dtype: string, cacheTypeK: string, cacheTypeV: string }

/** One saved slot: `<key>-<id>.bin` (llama-server's state file) beside `<key>-<id>.json` (this). */
interface Entry {
  id: string
  key: string
  model: string
  tokens: number
  bytes: number
  savedAt: number
  lastUsed: number
}

export interface PromptCacheOptions {
  /** The folder: `--slot-save-path` of every runtime, so that llama-server reads and writes there itself. */
  dir: string
  /** The most bytes the saved caches hold together; the least recently used go first. */
  sizeBytes: number
  /** A slot holding fewer tokens is not saved. */
  minTokens: number
  log?: Pick<Logger, 'info' | 'warn'>
  /** Told of each save and restore, for metrics. */
  onSaved?: (model: string, tokens: number, bytes: number) => void
  onRestored?: (model: string, tokens: number, bytes: number) => void
}

/** The longest a runtime's saves may hold up its stop, or its restores its first request. */
const TRANSFER_LIMIT_MS = 30_000
/** A runtime that does not list its slots this soon is not asked for them: a stop is not held up by a silent one. */
const LIST_LIMIT_MS = 2_000
/**
 * A save holding all but its last this many tokens of another one covers it: what differs between two turns of one
 * conversation is the chat template's tail and the tokens generated after it, not more.
 */
const COVERED_TAIL = 32
/** A save's file without its description this long is a leftover, not another process's save under way. */
const ORPHAN_AGE_MS = 10 * 60_000

/**
 * Prompt caches that outlive a runtime. Before a runtime stops, the slots worth keeping are saved (by
 * llama-server, into this folder) and kept under a size budget, least recently used dropped first; a save
 * that a longer one of the same conversation covers is not kept twice. When the model loads again, the most
 * recently used caches of the same shape are restored into its slots, and llama-server's own slot choice
 * (the longest common prefix) sends each request to the slot holding its conversation. A cache that does not
 * restore is deleted; the request runs as it would have without it.
 */
export class PromptCaches {
  private readonly entries = new Map<string, Entry>()
  private readonly tokens = new Map<string, Uint32Array>()
  private ready: Promise<void> | null = null

  constructor (private readonly options: PromptCacheOptions) {}

  get dir (): string { return this.options.dir }

  /** Creates the folder and reads what an earlier run left: half-written saves and files without their twin go. */
  init (): Promise<void> {
    this.ready ??= this.scan()
    return this.ready
  }

  /** The key of a shape: a model file and cache types whose state files are interchangeable. */
  keyOf (shape: CacheShape): string {
    return createHash('sha256').update(JSON.stringify([shape.model, shape.digest, shape.dtype, shape.cacheTypeK, shape.cacheTypeV])).digest('hex').slice(0, 16)
  }

  /** Saves the slots worth keeping of a runtime about to stop. Never throws: a failed save only logs. */
  async saveFrom (endpoint: RuntimeEndpoint, shape: CacheShape): Promise<number> {
    await this.init()
    const signal = AbortSignal.timeout(TRANSFER_LIMIT_MS)
    const key = this.keyOf(shape)
    let saved = 0
    try {
      const slots = (await endpoint.slotCaches(AbortSignal.timeout(LIST_LIMIT_MS))).filter((s) => s.tokens >= this.options.minTokens)
      for (const slot of slots) {
        const id = randomUUID()
        // The pid: replicas share the models folder, and a scan must not take another live process's save.
        const staging = `tmp-${process.pid}-${id}.bin`
        try {
          const done = await endpoint.saveSlot(slot.id, staging, signal)
          await rename(join(this.dir, staging), this.binFile(key, id))
          if (await this.adopt({ id, key, model: shape.model, tokens: done.tokens, bytes: done.bytes, savedAt: Date.now(), lastUsed: Date.now() })) {
            saved++
            this.options.onSaved?.(shape.model, done.tokens, done.bytes)
          }
        } finally {
          await rm(join(this.dir, staging), { force: true })
        }
      }
    } catch (err) {
      this.options.log?.warn({ model: shape.model, err: (err as Error).message }, 'saving prompt caches failed; the runtime stops without them')
    }
    await this.keepBudget()
    return saved
  }

  /**
   * Restores this shape's most recently used caches into the runtime's slots, one each, before it takes requests.
   * Never throws: a cache that does not restore is deleted.
   */
  async restoreInto (endpoint: RuntimeEndpoint, shape: CacheShape): Promise<number> {
    await this.init()
    const key = this.keyOf(shape)
    const mine = [...this.entries.values()].filter((e) => e.key === key).sort((a, b) => b.lastUsed - a.lastUsed)
    if (mine.length === 0) return 0
    const signal = AbortSignal.timeout(TRANSFER_LIMIT_MS)
    let restored = 0
    try {
      const slots = (await endpoint.slotCaches(signal)).filter((s) => !s.busy && s.tokens === 0)
      for (const slot of slots) {
        const entry = mine.find((e) => e.tokens <= slot.nCtx)
        if (entry === undefined) break
        mine.splice(mine.indexOf(entry), 1)
        try {
          const done = await endpoint.restoreSlot(slot.id, this.fileName(entry), signal)
          entry.lastUsed = Date.now()
          await this.writeEntry(entry)
          restored++
          this.options.onRestored?.(shape.model, done.tokens, done.bytes)
        } catch (err) {
          if (signal.aborted) throw err
          this.options.log?.warn({ model: shape.model, cache: entry.id, err: (err as Error).message }, 'a saved prompt cache did not restore; deleted')
          await this.drop(entry)
        }
      }
    } catch (err) {
      this.options.log?.warn({ model: shape.model, err: (err as Error).message }, 'restoring prompt caches stopped')
    }
    if (restored > 0) this.options.log?.info({ model: shape.model, restored }, 'prompt caches restored')
    return restored
  }

  /** Deletes every cache of a model (it is being deleted). */
  async dropModel (model: string): Promise<void> {
    await this.init()
    for (const entry of [...this.entries.values()].filter((e) => e.model === model)) await this.drop(entry)
  }

  /** The caches kept now, for tests and /metrics. */
  list (): Array<Readonly<Entry>> {
    return [...this.entries.values()].map((e) => ({ ...e }))
  }

  private async scan (): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    const names = new Set(await readdir(this.dir))
    const old = async (name: string): Promise<boolean> => Date.now() - (await stat(join(this.dir, name)).catch(() => null))?.mtimeMs! > ORPHAN_AGE_MS
    for (const name of names) {
      const pid = /^tmp-(\d+)-/.exec(name)?.[1]
      if (pid !== undefined) {
        if (!isAlive(Number(pid))) await rm(join(this.dir, name), { force: true })
        continue
      }
      if (name.endsWith('.bin')) {
        if (!names.has(name.replace(/\.bin$/, '.json')) && await old(name)) await rm(join(this.dir, name), { force: true })
        continue
      }
      if (!name.endsWith('.json')) continue
      try {
        const entry = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as Entry
        if (!names.has(name.replace(/\.json$/, '.bin')) || typeof entry.id !== 'string' || typeof entry.key !== 'string') throw new Error('incomplete')
        this.entries.set(entry.id, entry)
      } catch {
        await rm(join(this.dir, name), { force: true })
      }
    }
  }

  /**
   * Keeps a new save unless a save of the same conversation covers it (holds all of it but its tail); drops the
   * saves it covers, the earlier turns of its conversation.
   * @returns whether it was kept
   */
  private async adopt (entry: Entry): Promise<boolean> {
    let tokens: Uint32Array
    try {
      tokens = await readSlotStateTokens(this.binFile(entry.key, entry.id))
    } catch (err) {
      this.options.log?.warn({ model: entry.model, err: (err as Error).message }, 'a saved prompt cache is unreadable; deleted')
      await rm(this.binFile(entry.key, entry.id), { force: true })
      return false
    }
    for (const other of [...this.entries.values()].filter((e) => e.key === entry.key)) {
      const theirs = await this.tokensOf(other)
      if (theirs === null) continue
      const shared = commonPrefix(theirs, tokens)
      if (shared >= theirs.length - COVERED_TAIL && tokens.length >= theirs.length) {
        await this.drop(other)
      } else if (shared >= tokens.length - COVERED_TAIL) {
        other.lastUsed = Date.now()
        await this.writeEntry(other)
        await rm(this.binFile(entry.key, entry.id), { force: true })
        return false
      }
    }
    this.tokens.set(entry.id, tokens)
    entry.bytes = (await stat(this.binFile(entry.key, entry.id))).size
    await this.writeEntry(entry)
    this.entries.set(entry.id, entry)
    return true
  }

  private async tokensOf (entry: Entry): Promise<Uint32Array | null> {
    const known = this.tokens.get(entry.id)
    if (known) return known
    try {
      const tokens = await readSlotStateTokens(this.binFile(entry.key, entry.id))
      this.tokens.set(entry.id, tokens)
      return tokens
    } catch {
      await this.drop(entry)
      return null
    }
  }

  /** Drops the least recently used caches until the rest fit the budget. */
  private async keepBudget (): Promise<void> {
    const all = [...this.entries.values()].sort((a, b) => b.lastUsed - a.lastUsed)
    let total = 0
    for (const entry of all) {
      total += entry.bytes
      if (total > this.options.sizeBytes) await this.drop(entry)
    }
  }

  private async drop (entry: Entry): Promise<void> {
    this.entries.delete(entry.id)
    this.tokens.delete(entry.id)
    await rm(join(this.dir, `${entry.key}-${entry.id}.json`), { force: true })
    await rm(this.binFile(entry.key, entry.id), { force: true })
  }

  /** The sidecar, written whole under a temporary name: one that is there is complete. */
  private async writeEntry (entry: Entry): Promise<void> {
    const file = join(this.dir, `${entry.key}-${entry.id}.json`)
    const temporary = join(this.dir, `tmp-${process.pid}-${randomUUID()}.json`)
    await writeFile(temporary, JSON.stringify(entry))
    await rename(temporary, file)
  }

  private fileName (entry: Pick<Entry, 'key' | 'id'>): string { return `${entry.key}-${entry.id}.bin` }
  private binFile (key: string, id: string): string { return join(this.dir, this.fileName({ key, id })) }
}

/** How many tokens `a` and `b` share from their start. */
function commonPrefix (a: Uint32Array, b: Uint32Array): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}
