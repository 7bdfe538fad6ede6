import { readFileSync } from 'node:fs'

/**
 * True when a process with this pid runs on this host, ours or another user's (EPERM: alive, not ours). Not a pid
 * at all (0 or negative would signal a process group) counts as gone, and so does a zombie.
 */
export function isAlive (pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' && !isZombie(pid)
  }
  return !isZombie(pid)
}

/**
 * A process that has exited and that no parent has reaped yet (a zombie: state Z, or X while it goes): signals still
 * reach its pid, yet it runs nothing. An agent orphaned by a launch that was killed stays one where nothing reaps
 * orphans (a container whose first process does not). False where /proc does not say (not Linux).
 */
function isZombie (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat[stat.lastIndexOf(')') + 2]
    return state === 'Z' || state === 'X'
  } catch {
    return false
  }
}

/**
 * When a process started, from /proc (clock ticks since boot): with the pid it names one process for good,
 * so that a pid reused by another program is not taken for the one recorded. Null where /proc has no such
 * field (not Linux), or no such process.
 */
export function startTime (pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/** The process recorded as `pid` (started at `started`, where that was known) still runs. */
export function stillRuns (pid: number, started: string | null): boolean {
  if (!isAlive(pid)) return false
  return started === null || startTime(pid) === started
}
