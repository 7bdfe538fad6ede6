import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { link, lstat, mkdir, open, readFile, realpath, rm, rmdir, stat } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { isAlive, startTime, stillRuns } from '../../../base/process-alive.js'
import { writeWhole } from '../../../base/write-whole.js'
import { UsageError } from '../../../platform/usage-error.js'
import type { AgentWiring, MergedSettings } from './recipe.js'

/**
 * What launch needs to put a user's settings file back: written (mode 600) before the file is touched, removed only
 * once the file is back, so a launch killed at any point leaves either the user's file or a record to restore it.
 */
interface MergeRecord {
  /** The file written (a symlink's target: the link itself stays as the user made it). */
  path: string
  /** The user's file, base64; absent when there was none. */
  original?: string
  mode?: number
  /** The first folder launch made to hold the file, removed again when empty. */
  madeDir?: string
  /** sha256 of what launch wrote: anything else found there at the end was written by the agent or the user. */
  written: string
  pid: number
  /** The agent launch started, once it has: it may outlive a launch that is killed, still using the merged file. */
  agent?: { pid: number, started: string | null }
}

export interface Merge {
  file: string
  /** Records the agent's process, so that no one puts the file back under it while it runs. */
  started(pid: number): void
  /** Puts the user's file back; says on `note` what it did beyond that. */
  restore(note: (line: string) => void): Promise<void>
}

/** Where the record of one agent's merge lives: beside llamagate's own files in that HOME. */
export function recordPath (home: string, agent: string): string {
  return join(home, '.llamagate', 'launch-backups', `${agent}.json`)
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex')

async function readIfThere (file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/** The file as written: a symlink (a dotfiles manager's) is followed, so the link stays and its target is merged. */
async function target (file: string): Promise<string> {
  try {
    return (await lstat(file)).isSymbolicLink() ? await realpath(file) : file
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return file
    throw err
  }
}

/** The highest folder above `file` (below `home`) that does not exist yet: the one launch makes. */
async function firstMissing (file: string, home: string): Promise<string | undefined> {
  let missing: string | undefined
  for (let dir = dirname(file); relative(home, dir) !== '' && !relative(home, dir).startsWith('..'); dir = dirname(dir)) {
    if (await isFolder(dir)) break
    missing = dir
  }
  return missing
}

async function isFolder (dir: string): Promise<boolean> {
  try {
    return (await stat(dir)).isDirectory()
  } catch {
    return false
  }
}

/**
 * Merges the wiring into the user's settings file for one run. A record left by a launch that was killed is put
 * back first (its file holds that launch's settings, not the user's); one of a launch still running refuses.
 */
export async function mergeSettings (agent: string, merged: MergedSettings, wiring: AgentWiring, home: string, note: (line: string) => void): Promise<Merge> {
  const record = recordPath(home, agent)
  const left = await readRecord(record, merged, home)
  if (left !== undefined) {
    if (left.pid !== process.pid && isAlive(left.pid)) throw oneAtATime(agent, left)
    if (agentRuns(left)) throw new UsageError(`${agentOf(agent, left)} still runs with the settings in ${left.path}: stop it, then launch again`)
    await restoreFrom(record, left, note)
    note(`put back ${left.path}, left merged by a launch of ${agent} that was stopped before it could`)
  }
  const file = await target(join(home, merged.path))
  const original = await readIfThere(file)
  const text = merged.apply(original?.toString('utf8'), wiring)
  const entry: MergeRecord = {
    path: file,
    ...(original !== undefined ? { original: original.toString('base64'), mode: (await stat(file)).mode & 0o7777 } : {}),
    ...(original === undefined ? { madeDir: await firstMissing(file, home) } : {}),
    written: sha256(text),
    pid: process.pid,
  }
  // The folders launch makes for its records go again once empty: a launch leaves no trace in a HOME it found bare.
  const madeFolder = await firstMissing(record, home) ?? dirname(record)
  // The record first: from here on, a launch killed at any point can be undone. It is also the lock: a launch that
  // merged between our look for a record and now holds it, and its file is no longer the user's to back up.
  await createRecord(record, JSON.stringify(entry), async () => {
    const holder = await readRecord(record, merged, home)
    return oneAtATime(agent, holder ?? entry)
  })
  try {
    await writeWhole(file, text, 0o600)
  } catch (err) {
    // Not written (a read-only folder, a full disk): the user's file is as it was, and nothing is left to undo.
    await rm(record, { force: true })
    await removeEmpty(dirname(record), madeFolder)
    throw err
  }
  // The record rewritten with the agent's pid: restore waits for it, lest a late write bring the record back.
  let noted: Promise<void> = Promise.resolve()
  return {
    file,
    started: (pid) => {
      entry.agent = { pid, started: startTime(pid) }
      noted = writeWhole(record, JSON.stringify(entry), 0o600).catch((err: Error) => note(`could not note ${agent}'s pid in ${record}: ${err.message}`))
    },
    restore: async (n) => {
      await noted
      await restoreFrom(record, entry, n, madeFolder)
    },
  }
}

/** The agent a killed launch started is still running (the same process, not one that got its pid since). */
const agentRuns = (entry: MergeRecord): boolean => entry.agent !== undefined && stillRuns(entry.agent.pid, entry.agent.started)
const agentOf = (agent: string, entry: MergeRecord): string => `${agent} (pid ${entry.agent?.pid}), started by a launch that was killed,`

/** `llamagate launch --undo <agent>`: puts back what a killed launch left merged; false when nothing was left. */
export async function undoMerge (agent: string, merged: MergedSettings | undefined, home: string, note: (line: string) => void): Promise<boolean> {
  const record = recordPath(home, agent)
  const left = await readRecord(record, merged, home)
  if (left === undefined) return false
  if (left.pid !== process.pid && isAlive(left.pid)) {
    throw new UsageError(`llamagate launch ${agent} (pid ${left.pid}) is still running: it puts ${left.path} back when ${agent} exits`)
  }
  if (agentRuns(left)) {
    throw new UsageError(`${agentOf(agent, left)} still runs and may still read or write ${left.path}: stop it, then run llamagate launch --undo ${agent} again`)
  }
  await restoreFrom(record, left, note)
  return true
}

const oneAtATime = (agent: string, holder: MergeRecord): UsageError =>
  new UsageError(`another llamagate launch ${agent} (pid ${holder.pid}) has its settings in ${holder.path}: one at a time`)

/**
 * Creates the record only where none is: written whole beside it, then linked into place, which fails when the name
 * is taken (as O_EXCL does) yet never shows a reader a half-written record.
 */
async function createRecord (record: string, text: string, taken: () => Promise<Error>): Promise<void> {
  const temporary = `${record}.new-${process.pid}-${Math.random().toString(36).slice(2)}`
  await mkdir(dirname(record), { recursive: true, mode: 0o700 })
  await writeWhole(temporary, text, 0o600)
  try {
    await link(temporary, record)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw await taken()
    throw err
  } finally {
    await rm(temporary, { force: true })
  }
}

/**
 * The record, if there is one, checked before anything in it is believed: restoring writes and deletes what it
 * names, so one planted by someone else (a link, another owner, other modes) or naming another file is refused.
 */
async function readRecord (record: string, merged: MergedSettings | undefined, home: string): Promise<MergeRecord | undefined> {
  let handle
  try {
    // O_NOFOLLOW: a link at the record's name fails here rather than being read through.
    handle = await open(record, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return undefined
    if (code === 'ELOOP' || code === 'EMLINK') throw untrusted(record, 'it is a symbolic link')
    throw err
  }
  let text: string
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw untrusted(record, 'it is not a plain file')
    const uid = process.getuid?.()
    if (uid !== undefined && info.uid !== uid) throw untrusted(record, `it belongs to uid ${info.uid}, not to you`)
    if ((info.mode & 0o7777) !== 0o600) throw untrusted(record, `its mode is ${(info.mode & 0o7777).toString(8)}, not 600`)
    text = await handle.readFile('utf8')
  } finally {
    await handle.close()
  }
  let entry: unknown
  try {
    entry = JSON.parse(text)
  } catch {
    // Only a crash inside writeWhole's rename could leave this, and it renames whole files: say so rather than guess.
    throw new Error(`${record} is not a launch record; look at it, put your file back by hand, and remove it`)
  }
  return await checked(record, entry, merged, home)
}

/** The record's fields as restore uses them: the recipe's own file, and a made folder inside HOME holding it. */
async function checked (record: string, entry: unknown, merged: MergedSettings | undefined, home: string): Promise<MergeRecord> {
  const e = entry as Partial<MergeRecord> | null
  if (e === null || typeof e !== 'object' || typeof e.path !== 'string' || typeof e.written !== 'string' || !Number.isInteger(e.pid) ||
    (e.original !== undefined && typeof e.original !== 'string') || (e.mode !== undefined && !Number.isInteger(e.mode)) ||
    (e.madeDir !== undefined && typeof e.madeDir !== 'string') || (e.agent !== undefined && !isAgent(e.agent))) {
    throw untrusted(record, 'it is not a launch record')
  }
  if (merged === undefined) throw untrusted(record, 'this agent\'s launch merges no settings file')
  const own = join(home, merged.path)
  if (e.path !== own && e.path !== await target(own)) throw untrusted(record, `it names ${e.path}, not ${own}`)
  if (e.madeDir !== undefined && !(within(home, e.madeDir) && within(e.madeDir, e.path))) {
    throw untrusted(record, `its folder ${e.madeDir} is not one launch makes inside ${home}`)
  }
  return e as MergeRecord
}

const isAgent = (a: unknown): boolean => {
  const agent = a as Partial<NonNullable<MergeRecord['agent']>> | null
  return agent !== null && typeof agent === 'object' && Number.isInteger(agent.pid) && (agent.started === null || typeof agent.started === 'string')
}

/** `inner` is strictly below `outer`. */
function within (outer: string, inner: string): boolean {
  const rel = relative(outer, inner)
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)
}

const untrusted = (record: string, why: string): UsageError =>
  new UsageError(`${record} is not trusted (${why}): nothing was restored or changed; look at it, put your settings back by hand, and remove it`)

/** Puts the user's file back, then removes the record, and its folders up to `recordFolders` once they are empty. */
async function restoreFrom (record: string, entry: MergeRecord, note: (line: string) => void, recordFolders = dirname(record)): Promise<void> {
  const now = await readIfThere(entry.path)
  // The agent (or the user) changed the file during the run: theirs is kept beside the user's own.
  if (now !== undefined && sha256(now) !== entry.written) {
    const kept = `${entry.path}.from-launch`
    await writeWhole(kept, now, 0o600)
    note(`${entry.path} was changed during the run; that version is kept in ${kept}`)
  }
  if (entry.original !== undefined) {
    await writeWhole(entry.path, Buffer.from(entry.original, 'base64'), entry.mode ?? 0o600)
  } else {
    await rm(entry.path, { force: true })
    if (entry.madeDir !== undefined) await removeEmpty(dirname(entry.path), entry.madeDir)
  }
  await rm(record, { force: true })
  await removeEmpty(dirname(record), recordFolders)
}

/** Removes the empty folders from `dir` up to `top`, the ones launch made; stops at the first that holds anything. */
async function removeEmpty (dir: string, top: string): Promise<void> {
  for (let d = dir; ; d = dirname(d)) {
    try {
      await rmdir(d)
    } catch {
      return
    }
    if (d === top) return
  }
}
