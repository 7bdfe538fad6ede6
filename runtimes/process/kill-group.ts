/** What killGroup reads of a child: its pid, and whether Node has seen it exit (then reaped it). */
export interface GroupLeader { readonly pid?: number | undefined, readonly exitCode: number | null, readonly signalCode: NodeJS.Signals | null }

/**
 * A signal to the process group a child leads (it was started detached), else to the child alone; nothing once Node
 * has seen the child exit. A reaped child's pid, and the group id it named, may be another process's by then (pids
 * come round in a few minutes on a busy machine); what a runtime left behind is its watchdog's to end (watchdog.ts).
 */
export function killGroup (child: GroupLeader, signal: NodeJS.Signals): void {
  const pid = child.pid
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-pid, signal)
  } catch {
    try { process.kill(pid, signal) } catch { /* already gone */ }
  }
}
