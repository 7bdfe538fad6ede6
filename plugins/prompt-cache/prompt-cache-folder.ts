import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { lstat, mkdir, open, opendir, realpath, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { readSlotStateTokens } from '../../runtimes/index.js'

/**
 * One saved slot: `<key>-<id>.bin` (llama-server's state file) beside `<key>-<id>.json` (this, its sidecar). The
 * key and id are the file's name, never the sidecar's say; the bytes are the `.bin`'s size on disk.
 */
export interface CacheEntry {
  id: string
  key: string
  /** The `cache_salt` its slot was computed with ('' for none): part of its key, restored with it. */
  salt: string
  model: string
  tokens: number
  bytes: number
  savedAt: number
  lastUsed: number
}

/** What a look at the folder found, before anything is done about it (the scan acts on it, doctor reports it). */
export interface FolderSurvey {
  /** Whole saves: a regular `.bin` and a sidecar that parses and agrees with its name. */
  entries: CacheEntry[]
  /** The gateway's names, regular files, not whole: a sidecar that does not parse or match, or lost its `.bin`; and that `.bin`. */
  damaged: string[]
  /** `.bin` files without their sidecar, with their age: a save under way (another replica's), or a leftover. */
  unpaired: Array<{ name: string, ageMs: number }>
  /** Staging files, with the process writing them. */
  staging: Array<{ name: string, pid: number }>
  /** What the gateway did not write: other names, links, folders, other non-regular files. Never read nor deleted. */
  foreign: string[]
  /** More names than a survey looks at: the rest was not looked at. */
  truncated: boolean
}

// The only names the gateway writes: keyOf's 16 hex digits and a random UUID, or a staging name with its pid.
const KEY = '[0-9a-f]{16}'
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const SAVE_NAME = new RegExp(`^(${KEY})-(${UUID})\\.(bin|json)$`)
const STAGING_NAME = new RegExp(`^tmp-([1-9][0-9]{0,9})-${UUID}\\.(bin|json)$`)
/** The salts the gateway gives (plugins/leases/lease-terms.ts cacheSalt: a digest in hex); none is ''. */
const SALT = /^[0-9a-f]{0,64}$/
/** A sidecar is a hundred bytes and a model name: one larger was not written by the gateway. */
const MAX_SIDECAR_BYTES = 64 * 1024
/** Names a survey looks at: a folder stuffed with millions must not hold a start up. */
const MAX_NAMES = 100_000
// Planted files: a link is not followed, a FIFO must not hold the open.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

/** Where the prompt caches of a models folder are: a dot folder beside the models, which the store skips. */
export function promptCacheDir (modelsDir: string): string {
  return join(modelsDir, '.prompt-cache')
}

/** A save's file name; @throws Error for a key or id the gateway does not make (nothing else may reach a runtime). */
export function saveName (key: string, id: string, ext: 'bin' | 'json'): string {
  const name = `${key}-${id}.${ext}`
  if (!SAVE_NAME.test(name)) throw new Error(`not a prompt cache name: ${JSON.stringify(name)}`)
  return name
}

/** A staging file's name: its process id, so that a scan never takes another live process's file. */
export function stagingName (ext: 'bin' | 'json'): string {
  return `tmp-${process.pid}-${randomUUID()}.${ext}`
}

/**
 * The prompt-cache folder, trusting nothing it reads: replicas share it, and whoever can write into the models
 * folder can put anything there. Only the gateway's own names are touched, each resolved inside the folder; links
 * and non-regular files are not the gateway's, whatever their name.
 */
export class PromptCacheFolder {
  private root: string

  constructor (dir: string) { this.root = resolve(dir) }

  /** The folder, its links resolved once `open` has run: what runtimes are given as `--slot-save-path`. */
  get dir (): string { return this.root }

  /** Makes the folder, and pins where it is: a link swapped in later does not move the gateway elsewhere. */
  async open (): Promise<void> {
    await mkdir(this.root, { recursive: true })
    this.root = await realpath(this.root)
    if (!(await lstat(this.root)).isDirectory()) throw new Error(`${this.root} is not a folder`)
  }

  /** A name's path; @throws Error for a name the gateway does not write, or one that would leave the folder. */
  path (name: string): string {
    const file = resolve(this.root, name)
    if ((!SAVE_NAME.test(name) && !STAGING_NAME.test(name)) || dirname(file) !== this.root) throw new Error(`not a prompt cache name: ${JSON.stringify(name)}`)
    return file
  }

  /** A regular file's size; null for one that is gone, a link, or anything else. */
  async size (name: string): Promise<number | null> {
    const info = await lstat(this.path(name)).catch(() => null)
    return info?.isFile() === true ? info.size : null
  }

  /** The tokens a save holds (its `.bin`'s head). @throws as readSlotStateTokens */
  tokens (key: string, id: string): Promise<Uint32Array> {
    return readSlotStateTokens(this.path(saveName(key, id, 'bin')))
  }

  /** Deletes one of the gateway's files; anything else under that name (a link, a folder) is left. Never throws. */
  async remove (name: string): Promise<void> {
    try {
      const file = this.path(name)
      if ((await lstat(file)).isFile()) await rm(file, { force: true })
    } catch {}
  }

  /** Moves a staging file to its save's name (rename never follows a link at either end). */
  async settle (staging: string, key: string, id: string): Promise<void> {
    await rename(this.path(staging), this.path(saveName(key, id, 'bin')))
  }

  /** The sidecar, written whole under a staging name that must not exist yet: one that is there is complete. */
  async writeSidecar (entry: CacheEntry): Promise<void> {
    const { id, key, salt, model, tokens, bytes, savedAt, lastUsed } = entry
    const temporary = this.path(stagingName('json'))
    try {
      await writeFile(temporary, JSON.stringify({ id, key, salt, model, tokens, bytes, savedAt, lastUsed }), { flag: 'wx' })
      await rename(temporary, this.path(saveName(key, id, 'json')))
    } finally {
      await rm(temporary, { force: true })
    }
  }

  /** What the folder holds, read only; null when there is no folder yet. */
  async survey (now = Date.now()): Promise<FolderSurvey | null> {
    const found: FolderSurvey = { entries: [], damaged: [], unpaired: [], staging: [], foreign: [], truncated: false }
    const dir = await opendir(this.root).catch((err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return null; throw err })
    if (dir === null) return null
    const bins = new Map<string, { bytes: number, mtimeMs: number }>()
    const sidecars: Array<{ key: string, id: string, bytes: number }> = []
    let seen = 0
    for await (const dirent of dir) {
      if (++seen > MAX_NAMES) { found.truncated = true; break }
      const name = dirent.name
      const parsed = parseName(name)
      if (parsed === null) { found.foreign.push(name); continue }
      const info = await lstat(join(this.root, name)).catch(() => null)
      if (info === null) continue // gone since the listing
      if (!info.isFile()) found.foreign.push(name)
      else if (parsed.kind === 'staging') found.staging.push({ name, pid: parsed.pid })
      else if (parsed.ext === 'bin') bins.set(`${parsed.key}-${parsed.id}`, { bytes: info.size, mtimeMs: info.mtimeMs })
      else sidecars.push({ key: parsed.key, id: parsed.id, bytes: info.size })
    }
    for (const sidecar of sidecars) {
      const stem = `${sidecar.key}-${sidecar.id}`
      const bin = bins.get(stem)
      bins.delete(stem)
      const entry = bin === undefined || sidecar.bytes > MAX_SIDECAR_BYTES ? null : await this.readSidecar(sidecar.key, sidecar.id, bin.bytes, now)
      if (entry !== null) found.entries.push(entry)
      else found.damaged.push(`${stem}.json`, ...(bin === undefined ? [] : [`${stem}.bin`]))
    }
    for (const [stem, bin] of bins) found.unpaired.push({ name: `${stem}.bin`, ageMs: now - bin.mtimeMs })
    return found
  }

  /** A sidecar as an entry, null unless it parses and agrees with its name; the bytes are the `.bin`'s own. */
  private async readSidecar (key: string, id: string, bytes: number, now: number): Promise<CacheEntry | null> {
    let raw: unknown
    try {
      const handle = await open(this.path(saveName(key, id, 'json')), OPEN_FLAGS)
      try {
        const info = await handle.stat()
        if (!info.isFile()) return null
        // Read up to the bound, not to the end: the file may grow after its size was looked at.
        const buffer = Buffer.alloc(Math.min(info.size, MAX_SIDECAR_BYTES) + 1)
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
        if (bytesRead > MAX_SIDECAR_BYTES) return null
        raw = JSON.parse(buffer.toString('utf8', 0, bytesRead))
      } finally {
        await handle.close()
      }
    } catch {
      return null
    }
    if (typeof raw !== 'object' || raw === null) return null
    const { id: claimedId, key: claimedKey, salt = '', model, tokens, savedAt, lastUsed } = raw as Record<string, unknown>
    if (claimedId !== id || claimedKey !== key || typeof salt !== 'string' || !SALT.test(salt) || typeof model !== 'string' || !isCount(tokens) || !isCount(savedAt) || !isCount(lastUsed)) return null
    // A use in the future would keep a planted save first in line for ever.
    return { id, key, salt, model, tokens, bytes, savedAt, lastUsed: Math.min(lastUsed, now) }
  }
}

type ParsedName = { kind: 'save', key: string, id: string, ext: 'bin' | 'json' } | { kind: 'staging', pid: number }

/** What a name says, if it is one the gateway writes. */
function parseName (name: string): ParsedName | null {
  const save = SAVE_NAME.exec(name)
  if (save !== null) return { kind: 'save', key: save[1]!, id: save[2]!, ext: save[3] as 'bin' | 'json' }
  const staging = STAGING_NAME.exec(name)
  return staging === null ? null : { kind: 'staging', pid: Number(staging[1]) }
}

function isCount (value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}
