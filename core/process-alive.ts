/**
 * True when a process with this pid exists on this host, ours or another user's (EPERM: alive, not ours).
 * Not a pid at all (0 or negative would signal a process group) counts as gone.
 */
export function isAlive (pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
