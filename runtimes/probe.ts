import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { delimiter, isAbsolute, join } from 'node:path'
import { execa } from 'execa'

/**
 * Runs a hardware probe (`nvidia-smi`, `rocm-smi`, ...) with a time limit. A probe that is missing, fails
 * or hangs means "not present": the answer is null, never an exception.
 */
export async function runProbe (command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 3000): Promise<string | null> {
  // Most machines lack most probes: a spawn that fails still forks the whole server (its heap's page tables
  // copied) before exec finds nothing. A look along PATH costs a few stat calls.
  if (!await onPath(command, env.PATH)) return null
  try {
    // Its own process group: a hung probe's children (a wrapper script's `sleep`, a stuck driver call) would
    // otherwise keep its output open after the probe itself was killed.
    const child = execa(command, args, { env, extendEnv: false, reject: false, stdin: 'ignore', detached: true })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-child.pid!, 'SIGKILL') } catch { /* already gone */ }
    }, timeoutMs)
    const result = await child
    clearTimeout(timer)
    if (timedOut || result.exitCode !== 0) return null
    return result.stdout
  } catch {
    return null
  }
}

/**
 * Whether `command` names an executable file: itself when it is a path, else in an absolute folder of `path` (a
 * relative entry is skipped: a probe never runs from whatever folder the server was started in).
 */
async function onPath (command: string, path: string | undefined): Promise<boolean> {
  const candidates = command.includes('/')
    ? [command]
    : (path ?? '').split(delimiter).filter((dir) => isAbsolute(dir)).map((dir) => join(dir, command))
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK)
      return true
    } catch { /* not there, or not executable */ }
  }
  return false
}
