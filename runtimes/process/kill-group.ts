/** What killGroup reads of a child: its pid, and whether Node has seen it exit (then reaped it). */
export interface GroupLeader { readonly pid?: number | undefined, readonly exitCode: number | null, readonly signalCode: NodeJS.Signals | null }

/**
 * A signal to the process group a child leads (it was started detached), else to the child alone. The child alone
 * only while Node has not seen it exit: a child that exited was reaped, and its pid may be another process's now
 * (pids come round in a few minutes on a busy machine).
 */
export function killGroup (child: GroupLeader, signal: NodeJS.Signals): void {
  const pid = child.pid
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    if (child.exitCode !== null || child.signalCode !== null) return
    try { process.kill(pid, signal) } catch { /* already gone */ }
  }
}
