import { createHash } from 'node:crypto'
import { lstat, mkdir, readFile, realpath, rm, rmdir, stat } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { isAlive } from '../../process-alive.js'
import { writeWhole } from '../../write-whole.js'
import { UsageError } from '../usage-error.js'
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
}

export interface Merge {
  file: string
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
  const left = await readRecord(record)
  if (left !== undefined) {
    if (left.pid !== process.pid && isAlive(left.pid)) {
      throw new UsageError(`another llamagate launch ${agent} (pid ${left.pid}) has its settings in ${left.path}: one at a time`)
    }
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
  await mkdir(dirname(record), { recursive: true, mode: 0o700 })
  // The record first: from here on, a launch killed at any point can be undone.
  await writeWhole(record, JSON.stringify(entry), 0o600)
  try {
    await writeWhole(file, text, 0o600)
  } catch (err) {
    // Not written (a read-only folder, a full disk): the user's file is as it was, and nothing is left to undo.
    await rm(record, { force: true })
    throw err
  }
  return { file, restore: (n) => restoreFrom(record, entry, n) }
}

/** `llamagate launch --undo <agent>`: puts back what a killed launch left merged; false when nothing was left. */
export async function undoMerge (agent: string, home: string, note: (line: string) => void): Promise<boolean> {
  const record = recordPath(home, agent)
  const left = await readRecord(record)
  if (left === undefined) return false
  if (left.pid !== process.pid && isAlive(left.pid)) {
    throw new UsageError(`llamagate launch ${agent} (pid ${left.pid}) is still running: it puts ${left.path} back when ${agent} exits`)
  }
  await restoreFrom(record, left, note)
  return true
}

async function readRecord (record: string): Promise<MergeRecord | undefined> {
  const text = await readIfThere(record)
  if (text === undefined) return undefined
  try {
    return JSON.parse(text.toString('utf8')) as MergeRecord
  } catch {
    // Only a crash inside writeWhole's rename could leave this, and it renames whole files: say so rather than guess.
    throw new Error(`${record} is not a launch record; look at it, put your file back by hand, and remove it`)
  }
}

async function restoreFrom (record: string, entry: MergeRecord, note: (line: string) => void): Promise<void> {
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
