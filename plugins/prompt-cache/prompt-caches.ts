import { createHash, randomUUID } from 'node:crypto'
import { EventHub } from '../../core/base/event-hub.js'
import type { Logger } from '../../core/base/logger.js'
import { isAlive } from '../../core/base/process-alive.js'
import type { RuntimeEndpoint, SlotTransfer } from '../../runtimes/index.js'
import type { CacheShape, CachingRuntime, RestoreJudge, SchedulerPromptCache } from '../scheduler/ports.js'
import type { PromptCacheEvents } from './prompt-cache-events.js'
import { PromptCacheFolder, saveName, stagingName, type CacheEntry } from './prompt-cache-folder.js'
import { RestoreChecks, type RestoredSave } from './restore-checks.js'

export interface PromptCacheOptions {
  /** The folder: `--slot-save-path` of every runtime, so that llama-server reads and writes there itself. */
  dir: string
  /** The most bytes the saved caches hold together; the least recently used go first. */
  sizeBytes: number
  /** A slot holding fewer tokens is not saved. */
  minTokens: number
  log?: Pick<Logger, 'info' | 'warn'>
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
/** The most conversations taken from a runtime's RAM prompt cache when it stops (it holds 8 GiB by default). */
const MAX_CACHED_PROMPTS = 256
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
export class PromptCaches implements SchedulerPromptCache {
  /** Each save and restore, and each restore's verdict: for metrics. */
  readonly events: EventHub<PromptCacheEvents>
  /** By file stem (`<key>-<id>`). */
  private readonly entries = new Map<string, CacheEntry>()
  /** The tokens of the saves this process made (their runtime wrote them), by stem. */
  private readonly tokens = new Map<string, Uint32Array>()
  private readonly folder: PromptCacheFolder
  private ready: Promise<boolean> | null = null
  /** The judges of restores not all judged yet, and each runtime's: its last look comes before its saves. */
  private readonly judging = new Set<RestoreChecks>()
  private readonly judges = new WeakMap<RuntimeEndpoint, RestoreChecks>()

  constructor (private readonly options: PromptCacheOptions) {
    this.folder = new PromptCacheFolder(options.dir)
    this.events = new EventHub((err) => options.log?.warn({ err }, 'a prompt cache observer failed'))
  }

  /** The folder, as runtimes are to be given it (`--slot-save-path`) once `init` said it is usable. */
  get dir (): string { return this.folder.dir }

  /** The folder, read first (`init`): what runtimes save their slots into; null when it cannot be used. */
  async slotSavePath (): Promise<string | null> {
    return await this.init() ? this.dir : null
  }

  /**
   * Creates the folder and reads what an earlier run left: half-written saves and damaged ones go, what the gateway
   * did not write stays untouched. Never throws.
   * @returns false when the folder cannot be used (not a folder, not writable): runtimes then run without saves
   */
  init (): Promise<boolean> {
    this.ready ??= this.scan().then(() => true, (err: unknown) => {
      this.options.log?.warn({ dir: this.options.dir, err: (err as Error).message }, 'the prompt cache folder cannot be used; runtimes run without saved prompt caches')
      return false
    })
    return this.ready
  }

  /**
   * The key of a shape and a salt: a model file and cache types whose state files are interchangeable, computed with
   * one `cache_salt` (a cache group's: saves of two groups never share a key, nor a slot when restored).
   */
  keyOf (shape: CacheShape, salt = ''): string {
    const parts = [shape.model, shape.digest, shape.dtype, shape.cacheTypeK, shape.cacheTypeV, shape.parallel, ...(salt !== '' ? [salt] : [])]
    return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16)
  }

  /**
   * Saves the slots worth keeping of a runtime about to stop, and, where its build can (`cachedPrompts`), the
   * conversations its RAM prompt cache holds: those it moved out of a slot for another. Never throws: a failed save
   * only logs.
   */
  async saveFrom ({ endpoint, saves }: CachingRuntime, shape: CacheShape): Promise<void> {
    // What its slots say of the restores is read before the saves, while it still answers (a save changes no slot's
    // counts, but the stop that follows ends them).
    await this.judges.get(endpoint)?.stop()
    if (!await this.init()) return
    const { cachedPrompts } = saves
    const signal = AbortSignal.timeout(TRANSFER_LIMIT_MS)
    let written = 0
    const now = Date.now()
    // `age`: how many ms before now it was last used, to order the restores: a slot's conversation is the most recent,
    // then what the RAM cache holds, in its own order.
    const keep = async (write: (staging: string) => Promise<SlotTransfer | null>, salt?: string, age = 0): Promise<boolean> => {
      // The pid: replicas share the models folder, and a scan must not take another live process's save.
      const staging = stagingName('bin')
      try {
        const done = await write(staging)
        if (done === null) return false
        written += done.bytes
        if (done.tokens < this.options.minTokens) return true
        // Its group's, as llama-server says it was computed: restored later into a slot of that salt only.
        const entrySalt = salt ?? done.salt ?? ''
        const key = this.keyOf(shape, entrySalt)
        const id = randomUUID()
        await this.folder.settle(staging, key, id)
        const entry: CacheEntry = { id, key, salt: entrySalt, model: shape.model, tokens: done.tokens, bytes: 0, savedAt: Date.now(), lastUsed: now - age }
        if (await this.adopt(entry)) this.events.emit('saved', shape.model, done.tokens, entry.bytes)
        return true
      } finally {
        await this.folder.remove(staging)
      }
    }
    try {
      const slots = (await endpoint.slotCaches(AbortSignal.timeout(LIST_LIMIT_MS))).filter((s) => s.tokens >= this.options.minTokens)
      for (const slot of slots) await keep((staging) => endpoint.saveSlot(slot.id, staging, signal), slot.salt)
      // Most recently used first, and no more than the budget holds: it would keep only those.
      for (let index = 0; cachedPrompts && index < MAX_CACHED_PROMPTS && written < this.options.sizeBytes; index++) {
        if (!await keep((staging) => endpoint.saveCachedPrompt(index, staging, signal), undefined, index + 1)) break
      }
    } catch (err) {
      this.options.log?.warn({ model: shape.model, err: (err as Error).message }, 'saving prompt caches failed; the runtime stops without them')
    }
    await this.keepBudget()
  }

  /**
   * Restores this shape's most recently used caches into a fresh runtime's slots, before it takes requests; each is
   * then judged once (restore-checks.ts): reused or missed by the first task its slot takes, or unused when the
   * runtime stops first. One that did not serve is deleted.
   * @returns the judge of those restores, null when none was restored
   */
  async restoreInto ({ endpoint, saves }: CachingRuntime, shape: CacheShape): Promise<RestoreJudge | null> {
    const restored = await this.restore(endpoint, shape)
    if (restored.length === 0) return null
    const checks: RestoreChecks = new RestoreChecks({
      model: shape.model,
      endpoint,
      restored,
      minTokens: this.options.minTokens,
      checkpoints: saves.checkpoints,
      ...(this.options.log ? { log: this.options.log } : {}),
      onVerdict: async (save, verdict) => {
        if (checks.done) this.judging.delete(checks)
        if (verdict.outcome === 'reused') this.events.emit('reused', shape.model, verdict.reused)
        else if (verdict.outcome === 'unused') this.events.emit('unused', shape.model, save.tokens)
        else {
          // Told once the save is gone (or its deletion failed): an observer finds the folder as the miss left it.
          try {
            if (verdict.broken) await this.dropSave(save.save)
          } finally {
            this.events.emit('missed', shape.model, verdict.reason)
          }
        }
      },
    })
    this.judging.add(checks)
    this.judges.set(endpoint, checks)
    return checks
  }

  /**
   * A request on `model` has its first token: its prompt was read, so llama-server can tell whether it reused a
   * restore in its slot; judged now rather than at its end (a model swapped out right after would not wait).
   */
  judgeRestores (model: string): void {
    for (const checks of this.judging) {
      // Done without a verdict to say so: a build that does not tell what a slot reused.
      if (checks.done) this.judging.delete(checks)
      else if (checks.model === model) void checks.check()
    }
  }

  /** Restores caches into the runtime's slots, one each. Never throws: a cache that does not restore is deleted. */
  private async restore (endpoint: RuntimeEndpoint, shape: CacheShape): Promise<RestoredSave[]> {
    const restored: RestoredSave[] = []
    if (!await this.init()) return restored
    // Each save's salt is checked against its name's key: a sidecar cannot move a save into another group.
    const mine = [...this.entries.values()].filter((e) => e.key === this.keyOf(shape, e.salt)).sort((a, b) => b.lastUsed - a.lastUsed)
    if (mine.length === 0) return restored
    const signal = AbortSignal.timeout(TRANSFER_LIMIT_MS)
    try {
      const slots = (await endpoint.slotCaches(signal)).filter((s) => !s.busy && s.tokens === 0)
      for (const slot of slots) {
        const entry = mine.find((e) => e.tokens <= slot.nCtx)
        if (entry === undefined) break
        mine.splice(mine.indexOf(entry), 1)
        try {
          // Swapped for a link or removed since it was kept: llama-server would follow a link anywhere.
          if (await this.folder.size(saveName(entry.key, entry.id, 'bin')) === null) throw new Error('no longer a regular file')
          const done = await endpoint.restoreSlot(slot.id, saveName(entry.key, entry.id, 'bin'), signal, entry.salt)
          entry.lastUsed = Date.now()
          await this.writeEntry(entry)
          restored.push({ slot: slot.id, save: stem(entry), tokens: done.tokens })
          this.events.emit('restored', shape.model, done.tokens, done.bytes)
        } catch (err) {
          if (signal.aborted) throw err
          this.options.log?.warn({ model: shape.model, cache: entry.id, err: (err as Error).message }, 'a saved prompt cache did not restore; deleted')
          await this.drop(entry)
        }
      }
    } catch (err) {
      this.options.log?.warn({ model: shape.model, err: (err as Error).message }, 'restoring prompt caches stopped')
    }
    if (restored.length > 0) this.options.log?.info({ model: shape.model, restored: restored.length }, 'prompt caches restored')
    return restored
  }

  /** Deletes a save that did not serve when restored: it would only cost its restore again. */
  private async dropSave (save: string): Promise<void> {
    const entry = this.entries.get(save)
    if (entry !== undefined) await this.drop(entry)
  }

  /** Deletes every cache of a model (it is being deleted). */
  async dropModel (model: string): Promise<void> {
    if (!await this.init()) return
    for (const entry of [...this.entries.values()].filter((e) => e.model === model)) await this.drop(entry)
  }

  /** The caches kept now, for tests and /metrics. */
  list (): Array<Readonly<CacheEntry>> {
    return [...this.entries.values()].map((e) => ({ ...e }))
  }

  private async scan (): Promise<void> {
    await this.folder.open()
    const survey = await this.folder.survey()
    if (survey === null) return
    for (const { name, pid } of survey.staging) if (!isAlive(pid)) await this.folder.remove(name)
    for (const { name, ageMs } of survey.unpaired) if (ageMs > ORPHAN_AGE_MS) await this.folder.remove(name)
    for (const name of survey.damaged) await this.folder.remove(name)
    for (const entry of survey.entries) this.entries.set(stem(entry), entry)
    if (survey.foreign.length > 0 || survey.truncated) {
      this.options.log?.warn({ dir: this.dir, files: survey.foreign.length, truncated: survey.truncated }, 'files the gateway did not write are in the prompt cache folder: left alone, not counted (llamagate doctor lists them)')
    }
    // Found saves count by their size on disk, from the start: what an earlier run or a replica left may not fit.
    await this.keepBudget()
  }

  /**
   * Keeps a new save unless a save of the same conversation covers it (holds all of it but its tail); drops the
   * saves it covers, the earlier turns of its conversation.
   * @returns whether it was kept
   */
  private async adopt (entry: CacheEntry): Promise<boolean> {
    let tokens: Uint32Array
    const bin = saveName(entry.key, entry.id, 'bin')
    try {
      tokens = await this.folder.tokens(entry.key, entry.id)
    } catch (err) {
      this.options.log?.warn({ model: entry.model, err: (err as Error).message }, 'a saved prompt cache is unreadable; deleted')
      await this.folder.remove(bin)
      return false
    }
    for (const other of [...this.entries.values()].filter((e) => e.key === entry.key)) {
      const theirs = await this.tokensOf(other)
      if (theirs === null) continue
      const shared = commonPrefix(theirs, tokens)
      if (shared >= theirs.length - COVERED_TAIL && tokens.length >= theirs.length) {
        await this.drop(other)
      } else if (shared >= tokens.length - COVERED_TAIL) {
        other.lastUsed = Math.max(other.lastUsed, entry.lastUsed)
        await this.writeEntry(other)
        await this.folder.remove(bin)
        return false
      }
    }
    // Its size on disk, not what llama-server said it wrote: the budget counts what the folder holds.
    const bytes = await this.folder.size(bin)
    if (bytes === null) return false
    entry.bytes = bytes
    this.tokens.set(stem(entry), tokens)
    await this.folder.writeSidecar(entry)
    this.entries.set(stem(entry), entry)
    return true
  }

  /** Saves found on disk are read again each time, not kept: a planted one may hold millions of tokens. */
  private async tokensOf (entry: CacheEntry): Promise<Uint32Array | null> {
    const known = this.tokens.get(stem(entry))
    if (known) return known
    try {
      return await this.folder.tokens(entry.key, entry.id)
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

  private async drop (entry: CacheEntry): Promise<void> {
    this.entries.delete(stem(entry))
    this.tokens.delete(stem(entry))
    await this.folder.remove(saveName(entry.key, entry.id, 'json'))
    await this.folder.remove(saveName(entry.key, entry.id, 'bin'))
  }

  /** A failed write loses only the entry's last use: the save stays as it was. */
  private async writeEntry (entry: CacheEntry): Promise<void> {
    await this.folder.writeSidecar(entry).catch((err: Error) => {
      this.options.log?.warn({ model: entry.model, err: err.message }, 'a prompt cache\'s description could not be written')
    })
  }
}

const stem = (entry: Pick<CacheEntry, 'key' | 'id'>): string => `${entry.key}-${entry.id}`

/** How many tokens `a` and `b` share from their start. */
function commonPrefix (a: Uint32Array, b: Uint32Array): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}
