import { readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { isAlive, startTime } from '../../core/base/process-alive.js'

/** Who holds a writer's lock: written beside the lock by its holder, read by a writer who finds it taken. */
interface Owner {
  pid: number
  host: string
  started: string | null
  /** The lock directory it holds (inode and birth time); null in records written before this was kept. */
  lock: string | null
}

const SELF = { pid: process.pid, host: hostname(), started: startTime(process.pid) }

/**
 * Which directory a lock is: one taken over since (removed and made again) is another, though its name is the
 * same. Null when there is no lock.
 */
async function lockIdentity (lockDir: string): Promise<string | null> {
  try {
    const info = await stat(lockDir, { bigint: true })
    return `${info.ino}:${info.birthtimeNs}`
  } catch {
    return null
  }
}

/** Records this process as the holder of the lock directory `lockDir`, which it has just taken. */
export async function recordOwner (ownerPath: string, lockDir: string): Promise<void> {
  const owner: Owner = { ...SELF, lock: await lockIdentity(lockDir) }
  await writeFile(ownerPath, JSON.stringify(owner))
}

/** Forgets the record, if it is still ours (a taker-over may have written its own). */
export async function forgetOwner (ownerPath: string): Promise<void> {
  const owner = await readOwner(ownerPath)
  if (owner !== null && owner.pid === SELF.pid && owner.host === SELF.host) await rm(ownerPath, { force: true })
}

async function readOwner (ownerPath: string): Promise<Owner | null> {
  try {
    const parsed = JSON.parse(await readFile(ownerPath, 'utf8')) as Partial<Owner>
    return typeof parsed.pid === 'number' && typeof parsed.host === 'string' ? { pid: parsed.pid, host: parsed.host, started: parsed.started ?? null, lock: parsed.lock ?? null } : null
  } catch {
    return null
  }
}

/**
 * Whether the holder of the lock directory `lockDir` is a process of this host that is gone: its pid is dead, or
 * now belongs to a process that started at another time. A holder on another host (a shared volume) is never
 * judged so: only the lock's staleness tells about it. Nor is a record about another directory than the lock
 * there now: a dead holder's successor took the lock and has not yet recorded itself, and its lock is not to be
 * expired by a third process that read the old record.
 */
export async function ownerIsGone (ownerPath: string, lockDir: string): Promise<boolean> {
  const owner = await readOwner(ownerPath)
  if (owner === null || owner.host !== SELF.host) return false
  if (owner.lock !== null && owner.lock !== await lockIdentity(lockDir)) return false
  if (!isAlive(owner.pid)) return true
  return owner.started !== null && startTime(owner.pid) !== owner.started
}

/**
 * Makes a dead holder's lock look stale at once, so that proper-lockfile's own takeover (which removes and
 * retakes it atomically) applies now rather than after the staleness period. If a live writer took the lock over
 * in between, it finds out at its next refresh and its commit is refused, never half-made.
 */
export async function expireLock (lockDir: string): Promise<void> {
  await utimes(lockDir, 0, 0).catch(() => {})
}
