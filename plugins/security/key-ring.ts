import { createHash, timingSafeEqual } from 'node:crypto'
import { statSync, watch, type FSWatcher } from 'node:fs'
import { basename, dirname } from 'node:path'
import { KeysFileError, readKeysFile, SCOPES, type KeyEntry, type KeyLimits, type Scope } from './keys-file.js'
import type { Logger } from '../../core/base/logger.js'
import type { NameReach } from '../storage/name-reach.js'
import { matchesPattern } from './host-guard.js'
import type { Grant } from '../../core/base/grant.js'

export type { Grant } from '../../core/base/grant.js'

/** What a secret is: a grant, a key that was revoked, or nothing known. */
export type KeyCheck = { grant: Grant } | { revoked: string } | null

interface Known { digest: Buffer, grant: Grant | null, revokedName?: string }

/**
 * The keys the server accepts: auth.api_keys (full keys) and the keys file, re-read when it changes. A change
 * is seen at once: each check compares the file's identity (inode, size, mtime) with the one last read, so a key
 * revoked a moment ago is refused on the very next request; the watcher only makes reloads come sooner. A file
 * that fails to read keeps the keys it had, said in the log: a typo must not open the server or lock everyone out.
 */
export class KeyRing {
  private known: Known[] = []
  private fileKeys = 0
  private revokedLimits = new Map<string, KeyLimits>()
  private seen = ''
  private watcher: FSWatcher | null = null
  private readonly listeners: Array<() => void> = []

  constructor (private readonly configKeys: readonly string[], private readonly file: string, private readonly log: Pick<Logger, 'info' | 'error'>) {
    this.load(true)
  }

  /** Keys are on: auth.api_keys has one, or the keys file lists one (revoked ones count: revoking the last keeps them on). */
  get enabled (): boolean { return this.configKeys.length > 0 || this.fileKeys > 0 }

  /** Watches the file's folder (`llamagate keys` replaces the file by a rename, which a watch on the file would lose). */
  watch (): void {
    try {
      this.watcher = watch(dirname(this.file), { persistent: false }, (_event, name) => {
        if (name === null || name === basename(this.file)) this.refresh()
      })
      this.watcher.on('error', () => {})
    } catch {
      // No folder yet: the per-request check still sees a file created later.
    }
  }

  close (): void { this.watcher?.close() }

  /** Called after each reload that changed something. */
  onChange (listener: () => void): void { this.listeners.push(listener) }

  /** Re-reads the file when it is not the one last read. Cheap: one stat. */
  refresh (): void {
    if (this.identity() !== this.seen) this.load(false)
  }

  /** The grant of `secret`, in time independent of which key (if any) it matches (after `refresh()`, the caller's). */
  check (secret: string): KeyCheck {
    const candidate = createHash('sha256').update(secret).digest()
    let found: Known | undefined
    for (const known of this.known) if (timingSafeEqual(known.digest, candidate) && found === undefined) found = known
    if (found === undefined) return null
    return found.grant !== null ? { grant: found.grant } : { revoked: found.revokedName! }
  }

  /** The key named `name`, whether in the file or config (for admins asking about another key's usage). */
  has (name: string): boolean {
    return this.known.some((k) => (k.grant?.name ?? k.revokedName) === name)
  }

  /**
   * The grant of the key named `name` as the keys file has it now (after a refresh): 'revoked', or null when there is
   * none by that name. For what a key made and runs later (its batches).
   */
  grantOf (name: string): Grant | 'revoked' | null {
    this.refresh()
    const known = this.known.find((k) => (k.grant?.name ?? k.revokedName) === name)
    if (known === undefined) return null
    return known.grant ?? 'revoked'
  }

  /** The limits of the key named `name` (a revoked one's too); null when there is none by that name. */
  limitsOf (name: string): Readonly<KeyLimits> | null {
    const known = this.known.find((k) => (k.grant?.name ?? k.revokedName) === name)
    if (known === undefined) return null
    return known.grant?.limits ?? this.revokedLimits.get(name) ?? {}
  }

  private identity (): string {
    // Asked on every request: no file (keys in config.yaml only, or none) must not cost an exception each time.
    try {
      const s = statSync(this.file, { throwIfNoEntry: false })
      return s === undefined ? 'absent' : `${s.ino}:${s.size}:${s.mtimeMs}`
    } catch {
      return 'absent'
    }
  }

  private load (first: boolean): void {
    const identity = this.identity()
    let entries: KeyEntry[]
    try {
      entries = readKeysFile(this.file).keys
    } catch (err) {
      if (first || !(err instanceof KeysFileError)) throw err
      this.seen = identity
      this.log.error({ err: err.message }, 'the keys file was not reloaded: the keys it held before stay in force')
      return
    }
    // An editor saving in place empties the file first: read in that moment, it would drop every key, and keys
    // would go off (an open server). Blank, or changed while read, it keeps them; `keys: []` or no file applies.
    if (!first && entries.length === 0 && this.fileKeys > 0 && (identity.split(':')[1] === '0' || this.identity() !== identity)) {
      this.seen = identity
      this.log.info({ file: this.file }, 'the keys file was read empty (being saved?): the keys it held before stay in force; delete it to remove them all')
      return
    }
    this.seen = identity
    const groups = cacheGroups(this.configKeys.length, entries)
    const full: Grant = { name: '', scopes: new Set(SCOPES), models: ['*'], limits: {}, cacheGroup: null }
    this.known = [
      ...this.configKeys.map((key, i) => ({ digest: sha256(key), grant: { ...full, name: `config-${i + 1}`, cacheGroup: groups.of(`config-${i + 1}`) } })),
      ...entries.map((e) => ({
        digest: Buffer.from(e.hash.slice('sha256:'.length), 'hex'),
        grant: e.revoked === undefined ? { name: e.name, scopes: new Set(e.scopes), models: e.models, limits: e.limits, cacheGroup: groups.of(e.name, e.cache_group), ...priorityOf(e) } : null,
        ...(e.revoked !== undefined ? { revokedName: e.name } : {}),
      })),
    ]
    this.fileKeys = entries.length
    this.revokedLimits = new Map(entries.filter((e) => e.revoked !== undefined).map((e) => [e.name, e.limits]))
    if (!first) {
      this.log.info({ keys: entries.length, revoked: entries.filter((e) => e.revoked !== undefined).length }, 'keys file reloaded')
      for (const listener of this.listeners) listener()
    }
  }
}

/**
 * Whether `grant` may use the model a request named: judged by the model the name reaches (`reach`, as the store
 * resolves it: storage/name-reach.ts). The name as sent (an alias included), without Ollama's `:latest`, must match
 * one of the key's names or patterns, or, for an alias, the model it names. A stored model's own name wins over an
 * alias of that name, so there the alias's model does not count: it is not the model the request reaches.
 */
export function allowsModel (grant: Grant, requested: string, reach: NameReach<unknown>): boolean {
  if (grant.models.includes('*')) return true
  const names = [requested, requested.replace(/:latest$/i, ''), ...(reach !== null && 'alias' in reach ? [reach.alias] : [])]
  return grant.models.some((pattern) => names.some((n) => matchesPattern(n, pattern)))
}

/**
 * Each key's prompt-cache group: the keys file's `cache_group`, else its own name (auth.api_keys' keys each their own).
 * With one group in all (keys that all name one team, or a single key) there is nothing to keep apart: null.
 */
function cacheGroups (configKeys: number, entries: readonly KeyEntry[]): { of: (name: string, group?: string) => string | null } {
  const active = entries.filter((e) => e.revoked === undefined)
  const all = new Set([...Array.from({ length: configKeys }, (_, i) => `config-${i + 1}`), ...active.map((e) => e.cache_group ?? e.name)])
  return { of: (name, group) => all.size <= 1 ? null : group ?? name }
}

function sha256 (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** A key's priority classes as its grant carries them: absent when the keys file names none. */
function priorityOf (entry: KeyEntry): Pick<Grant, 'priority'> {
  if (entry.priority === undefined && entry.max_priority === undefined) return {}
  return { priority: { ...(entry.priority !== undefined ? { default: entry.priority } : {}), ...(entry.max_priority !== undefined ? { max: entry.max_priority } : {}) } }
}
